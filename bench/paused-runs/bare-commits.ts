import { loadavg } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { ms, quantile } from "./figures.ts";
import { dir } from "./options.ts";

/** One bare synchronous commit (WAL, synchronous=FULL) in `dir`: the fsync floor. */
export function bareCommits(count: number): string {
  const db = new Database(join(dir, `bare-${Math.random().toString(36).slice(2)}.db`));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const commit = db.transaction((v: string) => insert.run(v));
  for (let i = 0; i < 2500; i++) commit(`{"seq":${i}}`);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    commit(`{"seq":${i}}`);
    out.push((performance.now() - t0) * 1000);
  }
  db.close();
  out.sort((a, b) => a - b);
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
  return `bare commit, synchronous=FULL (the fsync floor): p50 ${ms(quantile(out, 0.5))} µs, p90 ${ms(quantile(out, 0.9))} µs, p99 ${ms(quantile(out, 0.99))} µs (load average ${load})`;
}
