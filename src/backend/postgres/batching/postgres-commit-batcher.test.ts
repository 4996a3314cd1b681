import { describe, expect, it } from "vitest";
import { CommitBatcher, type CommitBatcherOptions, type Settled } from "./postgres-commit-batcher.ts";

/** A batcher whose batches stay open until the test lets each go, recording what each held. */
function harness(options: Omit<CommitBatcherOptions<string, string>, "run">) {
  const batches: { items: string[]; release: (fail?: Error) => void }[] = [];
  let open = 0;
  let peak = 0;
  const batcher = new CommitBatcher<string, string>({
    ...options,
    run: (items) =>
      new Promise<Settled<string>[]>((resolve, reject) => {
        open++;
        peak = Math.max(peak, open);
        batches.push({
          items: [...items],
          release: (fail) => {
            open--;
            if (fail) reject(fail);
            else resolve(items.map((item) => ({ ok: true, value: `${item} stored` })));
          },
        });
      }),
  });
  return { batcher, batches, peak: () => peak };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const items = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe("CommitBatcher", () => {
  it("writes the calls of one turn together, one batch at a time, and later calls in the next batch", async () => {
    const h = harness({});
    const first = items("a", 5).map((i) => h.batcher.submit(i));
    await turn();
    const later = items("b", 3).map((i) => h.batcher.submit(i));
    await turn();
    await turn();
    expect(h.batches.map((b) => b.items)).toEqual([items("a", 5)]);
    h.batches[0]?.release();
    expect(await Promise.all(first)).toEqual(items("a", 5).map((i) => `${i} stored`));
    await turn();
    expect(h.batches.map((b) => b.items)).toEqual([items("a", 5), items("b", 3)]);
    h.batches[1]?.release();
    expect(await Promise.all(later)).toEqual(items("b", 3).map((i) => `${i} stored`));
    expect(h.peak()).toBe(1);
  });

  it("never puts two items of one key in a batch, and keeps each key's items in order", async () => {
    const h = harness({ key: (item) => item.split(":")[0] ?? item });
    const calls = ["x:1", "y:1", "x:2", "z:1", "x:3", "y:2"].map((i) => h.batcher.submit(i));
    for (const expected of [["x:1", "y:1", "z:1"], ["x:2", "y:2"], ["x:3"]]) {
      await turn();
      expect(h.batches.at(-1)?.items).toEqual(expected);
      h.batches.at(-1)?.release();
      await turn();
    }
    expect(await Promise.all(calls)).toEqual(["x:1", "y:1", "x:2", "z:1", "x:3", "y:2"].map((i) => `${i} stored`));
  });

  it("puts at most maxItems in a batch, the oldest first", async () => {
    const h = harness({ maxItems: 30 });
    const all = items("r", 70).map((i) => h.batcher.submit(i));
    for (let n = 0; n < 3; n++) {
      await turn();
      h.batches.at(-1)?.release();
      await turn();
    }
    expect(h.batches.map((b) => b.items)).toEqual([
      items("r", 70).slice(0, 30),
      items("r", 70).slice(30, 60),
      items("r", 70).slice(60),
    ]);
    expect(await Promise.all(all)).toHaveLength(70);
  });

  it("fails every item of a batch that throws with its error, gives each item its own outcome otherwise, and goes on", async () => {
    let fail = true;
    const batcher = new CommitBatcher<number, number>({
      run: async (batch) => {
        if (fail) throw new Error("connection lost");
        return batch.map(
          (n): Settled<number> =>
            n % 2 === 0 ? { ok: true, value: n * 10 } : { ok: false, error: new Error(`odd ${n}`) },
        );
      },
    });
    const outcome = (p: Promise<number>) => p.then(String, (e: Error) => e.message);
    expect(await Promise.all([1, 2].map((n) => outcome(batcher.submit(n))))).toEqual([
      "connection lost",
      "connection lost",
    ]);
    fail = false;
    expect(await Promise.all([3, 4].map((n) => outcome(batcher.submit(n))))).toEqual(["odd 3", "40"]);
  });
});
