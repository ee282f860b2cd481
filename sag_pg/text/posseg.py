"""jieba.posseg's part-of-speech tagger with its hidden Markov model decoded by numpy.

jieba.posseg finds words outside its dictionary (names above all: 宋知微, 莫迪) with a joint HMM over 256
(position, tag) states, decoded by a Viterbi search in pure Python. That search was 84 % of the rule
extractor's time on Chinese (11.5 of 13.7 CPU s for the 1 MB benchmark document, issue 36 item 11): every
step takes, for each possible state, a Python ``max`` over each possible state before it. Here the same
model (jieba's own tables), the same search and the same tie-breaking (on equal probability, the larger
state) run with numpy doing each step's max, and the decoded runs of characters are remembered (a big
document repeats its names). Nothing else of jieba changes: its dictionary, its DAG, its tags.

The results are jieba's, token for token: ``tests/test_posseg.py`` decodes every unknown run of a Chinese
corpus with both and compares the probabilities and routes exactly (float additions in jieba's order).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["PossegViterbi", "fast_posseg"]

MIN_FLOAT = -3.14e100  # jieba.posseg.viterbi's score of a character a state never emits


class PossegViterbi:
    """``jieba.posseg.viterbi(obs, char_state_tab, start_p, trans_p, emit_p)`` for fixed tables."""

    def __init__(self, char_state_tab: dict, start_p: dict, trans_p: dict, emit_p: dict) -> None:
        self.states = sorted(trans_p)  # in tuple order, so "the larger state" is the larger index
        index = {state: i for i, state in enumerate(self.states)}
        n = len(self.states)
        self.start = np.array([start_p[s] for s in self.states])
        self.trans = np.full((n, n), -np.inf)  # jieba: trans_p[a].get(b, MIN_INF)
        for a, following in trans_p.items():
            for b, p in following.items():
                self.trans[index[a], index[b]] = p
        self.follows = self.trans > -np.inf  # jieba tests a transition's presence, not its value
        self.live = self.follows.any(axis=1)  # states with any transition out
        self.emit = [emit_p[s] for s in self.states]
        self.char_states = {char: np.array(sorted(index[s] for s in states), dtype=np.intp)
                            for char, states in char_state_tab.items()}
        self.every = np.arange(n, dtype=np.intp)

    def _emit(self, states: np.ndarray, char: str) -> np.ndarray:
        emit = self.emit
        return np.array([emit[s].get(char, MIN_FLOAT) for s in states.tolist()])

    def __call__(self, obs: str) -> tuple[float, list[Any]]:
        states = self.char_states.get(obs[0], self.every)
        score = self.start[states] + self._emit(states, obs[0])
        steps: list[tuple[np.ndarray, np.ndarray]] = []  # (states, the best state before each)
        for char in obs[1:]:
            keep = self.live[states]
            before, prior = states[keep], score[keep]
            expected = self.follows[before].any(axis=0)
            # jieba: the character's own states that can follow; else all that can follow; else every state
            own = self.char_states.get(char)
            states = own[expected[own]] if own is not None else np.flatnonzero(expected)
            if not len(states):
                states = np.flatnonzero(expected) if expected.any() else self.every
            # jieba: max((V[t-1][y0] + trans_p[y0].get(y, MIN_INF) + emit_p[y].get(obs[t], MIN_FLOAT), y0))
            scores = (prior[:, None] + self.trans[np.ix_(before, states)]) + self._emit(states, char)[None, :]
            best = len(before) - 1 - np.argmax(scores[::-1], axis=0)  # the last maximum: the larger state
            score = scores[best, np.arange(len(states))]
            steps.append((states, before[best]))
        last = len(score) - 1 - int(np.argmax(score[::-1]))
        state = int(states[last])
        route: list[Any] = [None] * len(obs)
        route[-1] = self.states[state]
        for i in range(len(obs) - 1, 0, -1):
            at, came_from = steps[i - 1]
            state = int(came_from[np.searchsorted(at, state)])
            route[i - 1] = self.states[state]
        return float(score[last]), route


def fast_posseg(posseg: Any, memo: int = 1 << 16) -> Any:
    """A tokenizer like ``jieba.posseg.dt`` (same dictionary and word tags, shared, not copied) whose HMM
    runs on :class:`PossegViterbi`, its last ``memo`` decoded runs remembered."""
    decode = PossegViterbi(posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P)
    pair = posseg.pair

    @functools.lru_cache(maxsize=memo)
    def cut_run(sentence: str) -> tuple[Any, ...]:
        # jieba.posseg.POSTokenizer.__cut, with the decoder above
        _, pos_list = decode(sentence)
        words = []
        begin, nexti = 0, 0
        for i, char in enumerate(sentence):
            pos = pos_list[i][0]
            if pos == "B":
                begin = i
            elif pos == "E":
                words.append(pair(sentence[begin : i + 1], pos_list[i][1]))
                nexti = i + 1
            elif pos == "S":
                words.append(pair(char, pos_list[i][1]))
                nexti = i + 1
        if nexti < len(sentence):
            words.append(pair(sentence[nexti:], pos_list[nexti][1]))
        return tuple(words)

    class FastPOSTokenizer(posseg.POSTokenizer):
        def __init__(self, base: Any) -> None:  # the base's dictionary and word tags, shared
            self.base = base
            self.tokenizer = base.tokenizer

        @property
        def word_tag_tab(self) -> dict[str, str]:
            return self.base.word_tag_tab  # type: ignore[no-any-return]

        # jieba calls ``self.__cut`` for each run of characters its dictionary does not cover.
        def _POSTokenizer__cut(self, sentence: str) -> Any:  # jieba's mangled name
            return iter(cut_run(sentence))

    return FastPOSTokenizer(posseg.dt)
