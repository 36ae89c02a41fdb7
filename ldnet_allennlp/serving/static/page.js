// The page of `allennlp ldnet-serve`: asks GET model for the facts, POST predict for the tags,
// and shows them. Text from the model or the user is only ever set as textContent.
"use strict";

const PALETTE = [
  "#ffb3a7", "#a7d3ff", "#b8f0b0", "#e3c2ff", "#ffe08a",
  "#9ee6e0", "#ffc2e2", "#d9d2a6", "#c7c7ff", "#ffd1a6",
];
const colours = new Map();

function colourOf(type) {
  if (!colours.has(type)) {
    colours.set(type, PALETTE[colours.size % PALETTE.length]);
  }
  return colours.get(type);
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function showLegend(types) {
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  for (const type of types) {
    const item = element("li");
    item.dataset.type = type;
    const swatch = element("span", undefined, "swatch");
    swatch.style.backgroundColor = colourOf(type);
    item.append(swatch, element("span", type));
    legend.append(item);
  }
}

function formatNumber(value) {
  return Math.round(value).toLocaleString("en");
}

function showFacts(facts) {
  document.getElementById("model-name").textContent = facts.name ?
    `shipped model "${facts.name}" (${facts.archive})` :
    `${facts.archive} (an archive not in the manifest)`;
  const rows = [];
  if (facts.what) rows.push(["What", facts.what]);
  rows.push(["Task", facts.task || `tagging (${facts.label_encoding} tags)`]);
  rows.push(["Span types", facts.span_types.join(", ") || "none"]);
  rows.push(["Test F1", facts.test_f1 == null ? "unknown (no manifest entry)" :
    Number(facts.test_f1).toFixed(2)]);
  const lm = facts.lm_layers_kept;
  rows.push(["LM layers kept", lm == null ? "no LM features" :
    `forward [${lm.forward.join(", ")}], backward [${lm.backward.join(", ")}] of ${lm.of} each`]);
  rows.push(["FLOPs per token", `${formatNumber(facts.flops_per_token)} multiply-adds`]);
  rows.push(["Parameters", formatNumber(facts.parameters)]);
  rows.push(["Archive size", facts.size_bytes >= 1e6 ?
    `${(facts.size_bytes / 1e6).toFixed(1)} MB` : `${(facts.size_bytes / 1e3).toFixed(1)} kB`]);
  rows.push(["Limits", `${facts.limits.max_chars} characters per sentence, ` +
    `${facts.limits.max_sentences} sentences per request`]);
  if (facts.note) rows.push(["Note", facts.note]);
  const list = document.getElementById("facts");
  list.replaceChildren();
  for (const [term, value] of rows) {
    list.append(element("dt", term), element("dd", value));
  }
  showLegend(facts.span_types);
}

function showResult(output, serverMs, roundTripMs) {
  const highlighted = document.getElementById("highlighted");
  highlighted.replaceChildren();
  const spanAt = new Map(output.spans.map((span) => [span.start, span]));
  let i = 0;
  while (i < output.tokens.length) {
    if (i > 0) highlighted.append(" ");
    const span = spanAt.get(i);
    if (span) {
      const mark = element("mark", undefined, "entity");
      mark.dataset.type = span.type;
      mark.dataset.text = span.text;
      mark.style.backgroundColor = colourOf(span.type);
      mark.append(element("span", span.text, "entity-text"));
      mark.append(element("span", span.type, "entity-type"));
      highlighted.append(mark);
      i = span.end + 1;
    } else {
      highlighted.append(output.tokens[i]);
      i += 1;
    }
  }
  document.getElementById("no-spans").hidden = output.spans.length > 0;

  const body = document.querySelector("#tokens tbody");
  body.replaceChildren();
  output.tokens.forEach((token, index) => {
    const row = element("tr");
    const tag = output.tags[index];
    row.append(element("td", String(index)), element("td", token),
      element("td", tag, tag === "O" ? "tag-O" : undefined));
    body.append(row);
  });

  const server = serverMs == null ? "" : `, ${serverMs.toFixed(1)} ms in the server`;
  document.getElementById("timing").textContent =
    `${output.tokens.length} tokens tagged in ${roundTripMs.toFixed(1)} ms (round trip${server})`;
  document.getElementById("result").hidden = false;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = false;
}

function serverMilliseconds(response) {
  const timing = response.headers.get("Server-Timing") || "";
  const match = /dur=([0-9.]+)/.exec(timing);
  return match ? parseFloat(match[1]) : null;
}

async function tag(event) {
  event.preventDefault();
  const text = document.getElementById("text").value;
  const status = document.getElementById("status");
  const button = document.getElementById("tag-button");
  document.getElementById("error").hidden = true;
  button.disabled = true;
  status.textContent = "tagging…";
  const started = performance.now();
  try {
    const response = await fetch("predict", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ sentence: text }),
    });
    const roundTripMs = performance.now() - started;
    const answer = await response.json();
    if (!response.ok) {
      showError(`${response.status}: ${answer.detail}`);
      document.getElementById("result").hidden = true;
      status.textContent = "";
      return;
    }
    showResult(answer, serverMilliseconds(response), roundTripMs);
    status.textContent = "done";
  } catch (error) {
    showError(`The server did not answer: ${error}`);
    status.textContent = "";
  } finally {
    button.disabled = false;
  }
}

async function loadFacts() {
  try {
    const response = await fetch("model");
    showFacts(await response.json());
  } catch (error) {
    showError(`Could not read the model's facts: ${error}`);
  }
}

document.getElementById("tag-form").addEventListener("submit", tag);
document.getElementById("text").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    document.getElementById("tag-form").requestSubmit();
  }
});
loadFacts();
