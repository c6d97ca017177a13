#!/usr/bin/python3
"""Writes GSM8K-style word problems in verl's layout (train.jsonl, test.jsonl beside this file).

The problems are the project's own (templates below, small numbers, one or two operations), laid
out as verl's examples/data_preprocess/gsm8k.py lays out openai/gsm8k: the question with verl's
instruction appended as the user message, data_source "openai/gsm8k", ability "math",
reward_model {"style": "rule", "ground_truth": the number}, extra_info {split, index, answer: the
worked solution in GSM8K's style (<<a+b=c>> calculator notes, "#### N" last), question}.
Deterministic (random.Random(seed)): rerunning rewrites identical files.

  tests/data/gsm8k-style/generate.py [--train 320] [--test 64] [--seed 13]
"""
import argparse
import json
import random
from pathlib import Path

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
NAMES = ["Ava", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goro", "Hana", "Ivan", "Jia", "Kofi",
         "Lena", "Mateo", "Nia", "Omar", "Priya"]
THINGS = ["apples", "marbles", "stickers", "books", "coins", "pencils", "shells", "cards"]


def add(r, name, thing):
    a, b = r.randint(2, 20), r.randint(2, 20)
    q = f"{name} has {a} {thing} and gets {b} more. How many {thing} does {name} have now?"
    return q, f"{name} has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} {thing}.", a + b


def subtract(r, name, thing):
    a = r.randint(10, 30)
    b = r.randint(1, a - 1)
    q = f"{name} had {a} {thing} and gave away {b}. How many {thing} are left?"
    return q, f"{name} has {a} - {b} = <<{a}-{b}={a - b}>>{a - b} {thing} left.", a - b


def multiply(r, name, thing):
    a, b = r.randint(2, 9), r.randint(2, 9)
    q = f"{name} buys {a} bags with {b} {thing} in each bag. How many {thing} is that?"
    return q, f"That is {a} * {b} = <<{a}*{b}={a * b}>>{a * b} {thing}.", a * b


def two_steps(r, name, thing):
    a, b = r.randint(2, 6), r.randint(2, 6)
    c = r.randint(1, a * b - 1)
    q = (f"{name} has {a} boxes of {b} {thing} and uses {c} of them. "
         f"How many {thing} does {name} have left?")
    s = (f"{name} has {a} * {b} = <<{a}*{b}={a * b}>>{a * b} {thing}.\n"
         f"After using {c}, {a * b} - {c} = <<{a * b}-{c}={a * b - c}>>{a * b - c} are left.")
    return q, s, a * b - c


def share(r, name, thing):
    b = r.randint(2, 6)
    each = r.randint(2, 9)
    a = b * each
    q = f"{name} shares {a} {thing} equally among {b} friends. How many {thing} does each get?"
    return q, f"Each friend gets {a} / {b} = <<{a}/{b}={each}>>{each} {thing}.", each


KINDS = [add, subtract, multiply, two_steps, share]


def record(r, split, index, seen):
    while True:
        q, steps, n = r.choice(KINDS)(r, r.choice(NAMES), r.choice(THINGS))
        if q not in seen:
            seen.add(q)
            break
    answer = f"{steps}\n#### {n}"
    return {
        "data_source": "openai/gsm8k",
        "prompt": [{"role": "user", "content": q + " " + INSTRUCTION}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(n)},
        "extra_info": {"split": split, "index": index, "answer": answer, "question": q},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=320)
    ap.add_argument("--test", type=int, default=64)
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    r = random.Random(a.seed)
    here = Path(__file__).resolve().parent
    seen = set()  # no question in both splits
    for split, n in (("test", a.test), ("train", a.train)):
        rows = [record(r, split, i, seen) for i in range(n)]
        with open(here / f"{split}.jsonl", "w") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{here / (split + '.jsonl')}: {n} records")


if __name__ == "__main__":
    main()
