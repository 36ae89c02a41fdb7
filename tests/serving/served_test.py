"""
The real `allennlp ldnet-serve` command (`served`, tests/serving/conftest.py), in this order:
requests from 8 threads at once get the same answers as the same requests one at a time; the page
in headless Chromium highlights the spans the API gives (screenshot: runs/serve_screenshot.png);
SIGTERM stops the server cleanly.

The browser test needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Where
they are missing it fails when the environment variable `CI` is set (`.ci/run` sets it), and is
skipped otherwise, with the reason.
"""

import itertools
import os
import shutil
import signal
import threading

import httpx
import pytest

from tests.conftest import PROJECT_ROOT
from tests.serving.conftest import ARCHIVE, MAX_CHARS, RECORDED_INPUTS, RECORDED_OUTPUTS, Served

SCREENSHOT = PROJECT_ROOT / "runs" / "serve_screenshot.png"

SENTENCES = [
    "John Smith visited Paris.",
    "Shares in Bank of Avalon rose 3 percent in Brazil",
    "Reuters",
    "",
    "Zxqwv Blorfington met Qqq in Ulaanbaatar!",
    "The European Commission said on Thursday it disagreed with German advice.",
]
BODIES = (
    [{"sentence": s} for s in SENTENCES]
    + RECORDED_INPUTS
    + [RECORDED_INPUTS[:3], [{"sentence": s} for s in SENTENCES[:5]]]
)


def test_concurrent_requests_get_the_answers_of_sequential_ones(served: Served):
    with httpx.Client(base_url=served.url, timeout=60) as client:
        sequential = [client.post("/predict", json=body).json() for body in BODIES]
    assert sequential[len(SENTENCES) : len(SENTENCES) + len(RECORDED_INPUTS)] == RECORDED_OUTPUTS

    clients, rounds = 8, 3
    answers = {}
    errors = []

    def run(offset: int) -> None:
        try:
            with httpx.Client(base_url=served.url, timeout=60) as client:
                # each thread goes through every body, starting at a different one
                count = rounds * len(BODIES)
                order = itertools.islice(
                    itertools.cycle(range(len(BODIES))), offset, offset + count
                )
                for i in order:
                    response = client.post("/predict", json=BODIES[i])
                    answers.setdefault(i, []).append((response.status_code, response.json()))
        except Exception as error:  # noqa: BLE001 (reported below, in the test's thread)
            errors.append(error)

    threads = [threading.Thread(target=run, args=(offset,)) for offset in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors
    assert sum(len(got) for got in answers.values()) == clients * rounds * len(BODIES)
    for i, got in answers.items():
        assert all(answer == (200, sequential[i]) for answer in got), BODIES[i]


def chromium_driver():
    """Headless Chromium driven by Debian's chromedriver (no Selenium Manager, no download)."""
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and chromedriver):
        missing = "Debian's chromium and chromium-driver are not installed"
        if os.environ.get("CI"):
            pytest.fail(
                f"{missing}: CI must install them (apt-get install -y chromium chromium-driver, "
                "as .ci/run does)."
            )
        pytest.skip(
            f"{missing} (apt-get install -y chromium chromium-driver); where the environment "
            "variable CI is set, this fails instead"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in [
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1100,1400",
    ]:
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(chromedriver))


def test_the_page_highlights_the_spans_in_a_browser(served: Served):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    sentence = "Shares in Bank of Avalon rose 3 percent in Brazil"
    expected = httpx.post(f"{served.url}/predict", json={"sentence": sentence}).json()
    assert expected == RECORDED_OUTPUTS[1]  # spans of two types: MISC and ORG
    driver = chromium_driver()
    try:
        wait = WebDriverWait(driver, 30)
        driver.get(served.url + "/")
        # the model's facts and the legend come from GET /model
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#legend li"))
        legend = {
            item.get_attribute("data-type"): item.find_element(
                By.CSS_SELECTOR, ".swatch"
            ).value_of_css_property("background-color")
            for item in driver.find_elements(By.CSS_SELECTOR, "#legend li")
        }
        assert sorted(legend) == ["LOC", "MISC", "ORG", "PER"]
        assert len(set(legend.values())) == 4
        # the model by its archive's file name (not in the manifest), not by its path
        model_name = driver.find_element(By.ID, "model-name").text
        assert model_name == f"{ARCHIVE.name} (an archive not in the manifest)"
        facts = driver.find_element(By.ID, "facts").text
        assert "LM layers kept" in facts and "forward [1, 2], backward [0, 1] of 3 each" in facts
        assert "FLOPs per token" in facts and "unknown (no manifest entry)" in facts

        box = driver.find_element(By.ID, "text")
        box.send_keys(sentence)
        driver.find_element(By.ID, "tag-button").click()
        wait.until(expected_conditions.visibility_of_element_located((By.ID, "result")))
        marks = driver.find_elements(By.CSS_SELECTOR, "#highlighted mark.entity")
        shown = [
            (m.get_attribute("data-type"), m.find_element(By.CLASS_NAME, "entity-text").text)
            for m in marks
        ]
        assert shown == [(span["type"], span["text"]) for span in expected["spans"]]
        for mark in marks:  # coloured as the legend says
            assert (
                mark.value_of_css_property("background-color")
                == legend[mark.get_attribute("data-type")]
            )
        rows = driver.find_elements(By.CSS_SELECTOR, "#tokens tbody tr")
        assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == expected["tokens"]
        assert [r.find_elements(By.TAG_NAME, "td")[2].text for r in rows] == expected["tags"]
        assert "ms (round trip" in driver.find_element(By.ID, "timing").text
        SCREENSHOT.parent.mkdir(exist_ok=True)
        driver.save_screenshot(str(SCREENSHOT))

        # a text over --max-chars: the server's sentence is shown, the old result hidden
        box.clear()
        box.send_keys("x" * (MAX_CHARS + 1))
        driver.find_element(By.ID, "tag-button").click()
        wait.until(expected_conditions.visibility_of_element_located((By.ID, "error")))
        assert driver.find_element(By.ID, "error").text.startswith(
            "413: The JSON object: the text is"
        )
        assert not driver.find_element(By.ID, "result").is_displayed()
    finally:
        driver.quit()


def test_sigterm_stops_the_server_cleanly(served: Served):
    # last in this module: the tests above use the same server
    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(timeout=30) == 0
    log = served.log.read_text()
    assert "Application shutdown complete" in log and "ldnet-serve stopped" in log
    assert "Traceback" not in log
