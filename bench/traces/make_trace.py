#!/usr/bin/env python3
"""An independent trace generator (not Strata's): writes the CSV format that
`strata policy simulate` reads -- time,job,dataset,feature,chunk,bytes -- with
integer timestamps and spaces after commas, from a different model: jobs pick
features uniformly from a popular subset, read chunks in blocks, and a few
"ad hoc" jobs read random single chunks.

usage: make_trace.py OUT.csv [SEED]
"""
import random
import sys


def main():
    out = sys.argv[1]
    rnd = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    datasets = {f"table_{d}": [(f"col_{f}", rnd.choice([1, 4, 8, 16, 32]) << 18) for f in range(30)] for d in range(3)}
    rows = []
    t = 0
    for j in range(25):
        t += rnd.randint(10, 120)
        name, cols = rnd.choice(list(datasets.items()))
        popular = cols[:12]
        chosen = rnd.sample(popular, rnd.randint(3, 8))
        chunks = list(range(32))
        start = t
        for epoch in range(rnd.randint(1, 3)):
            rnd.shuffle(chunks)
            for block in range(0, len(chunks), 4):
                for c in chunks[block:block + 4]:
                    for col, size in chosen:
                        rows.append((start, f"train-{j}", name, col, c, size))
                    start += rnd.randint(1, 3)
        if j % 5 == 0:
            for _ in range(40):
                col, size = rnd.choice(cols)
                rows.append((t + rnd.randint(0, 500), f"adhoc-{j}", name, col, rnd.randrange(32), size))
    rows.sort(key=lambda r: r[0])
    with open(out, "w") as f:
        f.write("time, job, dataset, feature, chunk, bytes\n")
        for r in rows:
            f.write("%d, %s, %s, %s, %d, %d\n" % r)


if __name__ == "__main__":
    main()
