import { type EventClient, firstSeen } from "./event-client.ts";
import { CLIENTS, EXPECTED_STATES, n, type Transition } from "./options.ts";
import type { Settled } from "./settle.ts";

/**
 * The check: every client, every started run, every transition, once, in order, as logged. Prints
 * the counts and PASS or FAIL; true on PASS.
 */
export function checkDelivery(settled: Settled, clients: EventClient[]): boolean {
  const { runIds, log, unsettled, expectedPerClient, countOf } = settled;
  const logProblems = logProblemsOf(runIds, log);
  const { exact, missing, duplicates, outOfOrder, unknownIds, runsIncomplete, examples } = tally(clients, runIds, log);
  const differFromLog = differingFromLog(runIds, log);
  const expected = CLIENTS * expectedPerClient;
  const received = clients.reduce((sum, c) => sum + countOf(c), 0);
  const other = clients.reduce((sum, c) => sum + c.received, 0) - received;
  const differing = clients.reduce((sum, c) => sum + c.differing, 0);
  const resyncs = clients.reduce((sum, c) => sum + c.resyncs, 0);
  const seqBreaks = clients.reduce((sum, c) => sum + c.seqBreaks, 0);
  const dropped = clients.filter((c) => c.dropped !== undefined);
  console.log(
    `no event missed? ${n(CLIENTS)} clients × ${n(runIds.length)} runs × their logged transitions (${n(expectedPerClient)} per client) = ${n(expected)} expected`,
  );
  console.log(
    `   received ${n(received)}; exactly once and in order ${n(exact)}; missing ${n(missing)} (in ${n(runsIncomplete)} client-runs);` +
      ` duplicates ${n(duplicates)}; out of order ${n(outOfOrder)}; ids not in the log ${n(unknownIds)}`,
  );
  console.log(
    `   copies differing from another client's ${n(differing)}; first copies differing from GET /api/runs/:id/transitions ${n(differFromLog)};` +
      ` runs whose log is not PENDING, RUNNING, COMPLETED (1..3) ${n(logProblems)}`,
  );
  console.log(
    `   feed sequence breaks ${n(seqBreaks)}; streams restarted (a second ready) ${n(resyncs)}; connections dropped ${n(dropped.length)}` +
      `${dropped[0] ? ` (${dropped[0].dropped})` : ""}; transitions of other runs ${n(other)}`,
  );
  for (const e of examples) console.log(`   e.g. ${e}`);
  const pass =
    runIds.length > 0 &&
    unsettled.length === 0 &&
    exact === expected &&
    received === expected &&
    missing === 0 &&
    duplicates === 0 &&
    outOfOrder === 0 &&
    unknownIds === 0 &&
    differing === 0 &&
    differFromLog === 0 &&
    logProblems === 0 &&
    seqBreaks === 0 &&
    resyncs === 0 &&
    dropped.length === 0;
  console.log(
    pass
      ? `PASS: each of the ${n(CLIENTS)} clients received every transition of the ${n(runIds.length)} runs exactly once, in order`
      : `FAIL: events were missed, repeated or reordered (see above)${runIds.length === 0 ? "; no run was started" : ""}`,
  );
  return pass;
}

/** Runs whose log is not PENDING, RUNNING, COMPLETED (1..3); the first five are printed. */
function logProblemsOf(runIds: string[], log: Map<string, Transition[]>): number {
  let logProblems = 0;
  for (const id of runIds) {
    const ts = log.get(id);
    const shapeOk =
      ts !== undefined &&
      ts.length === EXPECTED_STATES.length &&
      ts.every((t, i) => t.id === i + 1 && t.to === EXPECTED_STATES[i] && t.runId === id);
    if (!shapeOk) {
      logProblems++;
      if (logProblems <= 5)
        console.log(
          `   run ${id}: its log is ${ts ? ts.map((t) => `#${t.id} ${t.to}`).join(", ") : "unfinished"}, not #1 PENDING, #2 RUNNING, #3 COMPLETED`,
        );
    }
  }
  return logProblems;
}

/** What the clients received of each started run, against its log. */
function tally(clients: EventClient[], runIds: string[], log: Map<string, Transition[]>) {
  let exact = 0;
  let missing = 0;
  let duplicates = 0;
  let outOfOrder = 0;
  let unknownIds = 0;
  let runsIncomplete = 0;
  const examples: string[] = [];
  for (const c of clients) {
    for (const id of runIds) {
      const ts = log.get(id) ?? [];
      const got = c.runs.get(id) ?? [];
      const seen = new Set<number>();
      let prev = 0;
      for (const tid of got) {
        if (seen.has(tid)) duplicates++;
        else if (tid < prev) outOfOrder++;
        if (tid < 1 || tid > ts.length) unknownIds++;
        seen.add(tid);
        prev = Math.max(prev, tid);
      }
      let lacking = 0;
      for (const t of ts) if (!seen.has(t.id)) lacking++;
      missing += lacking;
      if (lacking > 0) runsIncomplete++;
      if (got.length === ts.length && got.every((tid, i) => tid === i + 1)) exact += got.length;
      else if (examples.length < 5)
        examples.push(`client ${c.index}, run ${id}: got [${got.join(", ")}] of ${ts.length}`);
    }
  }
  return { exact, missing, duplicates, outOfOrder, unknownIds, runsIncomplete, examples };
}

/** First copies (of any client) that differ from the transition log. */
function differingFromLog(runIds: string[], log: Map<string, Transition[]>): number {
  let differFromLog = 0;
  for (const id of runIds) {
    for (const t of log.get(id) ?? []) {
      const first = firstSeen.get(`${id}#${t.id}`);
      if (first && (first.at !== t.at || first.from !== t.from || first.to !== t.to)) differFromLog++;
    }
  }
  return differFromLog;
}
