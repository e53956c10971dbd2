"""Throughput and memory of MultinomialNB on hashed text (issue 12): generated documents
(Zipf-distributed words, two classes with different topic words), HashingVectorizer with
2^18 features, then fit and predict_proba of hebnb MultinomialNB (the default heb-u with
the leave-one-out posterior power, heb-u untempered, laplace) and scikit-learn's
MultinomialNB side by side in one run: the models alternate (A B C D A B C D ...) for
``--rounds`` rounds and the tables report medians of wall and CPU (process) seconds.

Memory is the peak resident set size during the call minus the size before it, sampled
every 2 ms from /proc/self/statm (it includes what the call allocates and frees, not the
input matrix); the median over the rounds.

    nice -n 5 python benches/text_hashing.py --docs 1000000 --rounds 5
"""

from __future__ import annotations

import argparse
import functools
import os
import threading
import time

import numpy as np
import sklearn.naive_bayes as skl
from scipy import sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer
from tqdm import tqdm

import hebnb

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def measured(call):
    """(result, wall seconds, CPU seconds, peak extra bytes) of ``call()``."""
    base, peak, done = rss(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.002)

    thread = threading.Thread(target=sample)
    thread.start()
    start, cpu = time.perf_counter(), time.process_time()
    result = call()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    done.set()
    thread.join()
    return result, seconds, cpu, max(peak[0], rss()) - base


def documents(n_docs: int, seed: int, chunk: int = 50_000):
    """Chunks of (texts, labels): 50,000 word types with Zipf(1.1) frequencies, 30 words
    per document on average; a class's documents draw 20% of their words from its own
    300 topic words."""
    rng = np.random.default_rng(seed)
    n_words = 50_000
    weights = 1.0 / np.arange(1, n_words + 1) ** 1.1
    weights /= weights.sum()
    words = np.array([f"w{i}" for i in range(n_words)])
    topics = [rng.choice(n_words, 300, replace=False) for _ in range(2)]
    for start in range(0, n_docs, chunk):
        size = min(chunk, n_docs - start)
        labels = rng.integers(0, 2, size=size)
        lengths = rng.poisson(30, size=size) + 1
        total = int(lengths.sum())
        common = rng.choice(n_words, size=total, p=weights)
        owner = np.repeat(labels, lengths)
        topical = rng.random(total) < 0.2
        topic_words = np.where(
            owner == 0,
            topics[0][rng.integers(0, 300, total)],
            topics[1][rng.integers(0, 300, total)],
        )
        tokens = words[np.where(topical, topic_words, common)]
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        texts = [" ".join(tokens[bounds[i] : bounds[i + 1]]) for i in range(size)]
        yield texts, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    vectorizer = HashingVectorizer(n_features=2**18, alternate_sign=False, norm=None)
    blocks, labels = [], []
    start = time.perf_counter()
    with tqdm(total=args.docs, unit="doc") as bar:
        for texts, y in documents(args.docs, args.seed):
            blocks.append(vectorizer.transform(texts))
            labels.append(y)
            bar.update(len(texts))
    X, y = sp.vstack(blocks).tocsr(), np.concatenate(labels)
    del blocks
    print(
        f"{X.shape[0]:,} documents x {X.shape[1]:,} hashed features, {X.nnz:,} non-zeros "
        f"({(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 1e6:.0f} MB as CSR), "
        f"generated and hashed in {time.perf_counter() - start:.0f} s"
    )
    models = {
        "hebnb MultinomialNB default (heb-u, LOO power)": hebnb.MultinomialNB(),
        "hebnb MultinomialNB heb-u tau=1": hebnb.MultinomialNB(posterior_power=1.0),
        "hebnb MultinomialNB laplace": hebnb.MultinomialNB(smoothing="laplace"),
        "sklearn MultinomialNB alpha=1": skl.MultinomialNB(),
    }
    runs: dict[str, list[tuple[float, ...]]] = {name: [] for name in models}
    for _ in tqdm(range(args.rounds), unit="round"):
        for name, model in models.items():
            _, fit_s, fit_cpu, fit_mem = measured(functools.partial(model.fit, X, y))
            _, predict_s, predict_cpu, predict_mem = measured(
                functools.partial(model.predict_proba, X)
            )
            runs[name].append((fit_s, fit_cpu, fit_mem, predict_s, predict_cpu, predict_mem))
    print(
        f"\nmedians of {args.rounds} alternating rounds\n\n"
        "| model | fit s | fit CPU s | fit docs/s | fit extra MB | predict_proba s "
        "| predict CPU s | predict docs/s | predict extra MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rounds in runs.items():
        fit_s, fit_cpu, fit_mem, predict_s, predict_cpu, predict_mem = np.median(rounds, axis=0)
        print(
            f"| {name} | {fit_s:.2f} | {fit_cpu:.2f} | {X.shape[0] / fit_s:,.0f} | "
            f"{fit_mem / 1e6:.0f} | {predict_s:.2f} | {predict_cpu:.2f} | "
            f"{X.shape[0] / predict_s:,.0f} | {predict_mem / 1e6:.0f} |"
        )


if __name__ == "__main__":
    main()
