"""Prompt text: common English words that are one token each, and the check of that against
the engine's own tokenizer (`calibrate_vocabulary`), so a prompt of N words is N tokens."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import TypedDict

# Common English words that are one token each (with their leading space) in GPT-2-style
# and SentencePiece vocabularies; calibrate_vocabulary() checks this against the engine.
VOCABULARY: tuple[str, ...] = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "be",
    "at",
    "by",
    "this",
    "have",
    "from",
    "or",
    "one",
    "had",
    "not",
    "but",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "an",
    "your",
    "which",
    "their",
    "said",
    "if",
    "do",
    "will",
    "each",
    "about",
    "how",
    "up",
    "out",
    "them",
    "then",
    "she",
    "many",
    "some",
    "so",
    "these",
    "would",
    "other",
    "into",
    "has",
    "more",
    "her",
    "two",
    "like",
    "him",
    "see",
    "time",
    "could",
    "no",
    "make",
    "than",
    "first",
    "been",
    "its",
    "who",
    "now",
    "people",
    "my",
    "made",
    "over",
    "did",
    "down",
    "only",
    "way",
    "find",
    "use",
    "may",
    "water",
    "long",
    "little",
    "very",
    "after",
    "words",
    "called",
    "just",
    "where",
    "most",
    "know",
    "get",
    "through",
    "back",
    "much",
    "go",
    "good",
    "new",
    "write",
    "our",
    "me",
    "man",
    "too",
    "any",
    "day",
    "same",
    "right",
    "look",
    "think",
    "also",
    "around",
    "another",
    "came",
    "come",
    "work",
    "three",
    "word",
    "must",
    "because",
    "does",
    "part",
    "even",
    "place",
    "well",
    "such",
    "here",
    "take",
    "why",
    "things",
    "help",
    "put",
    "years",
    "different",
    "away",
    "again",
    "off",
    "went",
    "old",
    "number",
    "great",
    "tell",
    "men",
    "say",
    "small",
    "every",
    "found",
    "still",
    "between",
    "name",
    "should",
    "home",
    "big",
    "give",
    "air",
    "line",
    "set",
    "own",
    "under",
    "read",
    "last",
    "never",
    "us",
    "left",
    "end",
    "along",
    "while",
    "might",
    "next",
    "sound",
    "below",
    "saw",
    "something",
    "thought",
    "both",
    "few",
    "those",
    "always",
    "looked",
    "show",
    "large",
    "often",
    "together",
    "asked",
    "house",
    "world",
    "going",
    "want",
    "school",
    "important",
    "until",
    "form",
    "food",
    "keep",
    "children",
    "feet",
    "land",
    "side",
    "without",
    "boy",
    "once",
    "animals",
    "life",
    "enough",
    "took",
    "sometimes",
    "four",
    "head",
    "above",
    "kind",
    "began",
    "almost",
    "live",
    "page",
    "got",
    "earth",
    "need",
    "far",
    "hand",
    "high",
    "year",
    "mother",
    "light",
    "parts",
    "country",
    "father",
    "let",
    "night",
    "following",
    "picture",
    "being",
    "study",
    "second",
    "eyes",
    "soon",
    "times",
    "story",
    "boys",
    "since",
    "white",
    "days",
    "ever",
    "paper",
    "hard",
    "near",
    "sentence",
    "better",
    "best",
    "across",
    "during",
    "today",
    "others",
    "however",
    "sure",
    "means",
    "knew",
    "try",
    "told",
    "young",
    "miles",
    "sun",
    "ways",
    "thing",
    "whole",
    "hear",
    "example",
    "heard",
    "several",
    "change",
    "answer",
    "room",
    "sea",
    "against",
    "top",
    "turned",
    "learn",
    "point",
    "city",
    "play",
    "toward",
    "five",
    "using",
    "himself",
    "usually",
    "money",
    "seen",
    "car",
    "morning",
    "given",
    "body",
    "family",
    "later",
    "order",
    "river",
    "short",
)

TAG_WORDS = 4


@dataclass
class PromptText:
    """Deterministic text of an exact number of vocabulary words."""

    vocabulary: tuple[str, ...] = VOCABULARY
    tokens_per_word: float = 1.0

    def words(self, rng: random.Random, tokens: int) -> str:
        count = max(1, round(tokens / self.tokens_per_word))
        vocab = self.vocabulary
        return " ".join(vocab[int(rng.random() * len(vocab))] for _ in range(count))

    def tag(self, salt: str, words: int = 4) -> str:
        """A few words derived from `salt`: prompts of different runs never share a prefix."""
        digest = hashlib.sha256(salt.encode()).digest()
        return " ".join(self.vocabulary[digest[i] % len(self.vocabulary)] for i in range(words))


class CalibrationJson(TypedDict, total=False):
    """How the prompt text was calibrated, as a run's summary stores it (`prompt_calibration`)."""

    method: str
    engine: str | None
    words_checked: int
    words_kept: int
    dropped: list[str]


@dataclass
class Calibration:
    """What calibrate_vocabulary found, stored with the run."""

    method: str
    engine: str | None = None
    words_checked: int = 0
    words_kept: int = 0
    dropped: list[str] = field(default_factory=list)

    def to_dict(self) -> CalibrationJson:
        return CalibrationJson(
            method=self.method,
            engine=self.engine,
            words_checked=self.words_checked,
            words_kept=self.words_kept,
            dropped=self.dropped[:20],
        )


def calibrate_vocabulary(
    token_counts: dict[str, int], baseline: int
) -> tuple[tuple[str, ...], list[str]]:
    """Keep the words the engine's tokenizer counts as exactly one token.

    `token_counts` maps each word (with its leading space, as sent inside a prompt) to the
    tokens the engine counted; `baseline` is its count for the empty text (special tokens).
    Falls back to the whole vocabulary when too few words survive to make varied text.
    """
    kept = tuple(word for word in VOCABULARY if token_counts.get(" " + word, 0) - baseline == 1)
    dropped = [word for word in VOCABULARY if word not in kept]
    if len(kept) < 64:
        return VOCABULARY, dropped
    return kept, dropped
