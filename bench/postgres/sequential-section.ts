import { bareCommits } from "./bare-commits.ts";
import { Child } from "./child.ts";
import { int, mean, median, printSteps, type Series } from "./figures.ts";
import type { PeerUrls } from "./peers.ts";
import type { SystemName } from "./roles.ts";
import { databaseOf, serverCpu, serverCpuSpent } from "./server-cpu.ts";
import type { Settings } from "./settings.ts";

/** 1. Sequential: one run of N trivial steps per system and round (see bench/postgres.ts). */
export async function sequentialSection(settings: Settings, cairnUrl: string, peerUrls: PeerUrls | undefined) {
  const rounds = await measureRounds(settings, cairnUrl, peerUrls);
  printSequential(settings, rounds);
}

async function measureRounds(
  { STEPS, ROUNDS, WARM_UP }: Settings,
  cairnUrl: string,
  peerUrls: PeerUrls | undefined,
): Promise<Series[][]> {
  // 1. Sequential -----------------------------------------------------------------------------
  // Rounds, each system once per round in turn, so that what else the server does at a moment
  // (it is shared) falls on all of them; the warm-up run only in the first round.
  // Each system in a child process of its own (systemRole); the bare commits in this one.
  const systems: { name: string; url: string; child: Child }[] = [];
  const seqSystems: [SystemName, string, (label: string) => string][] = [
    ["cairn-machine", cairnUrl, (label) => `${label}, durability "machine"`],
    ["cairn-process", cairnUrl, (label) => `${label}, durability "process"`],
    ...(peerUrls
      ? ([
          ["dbos", peerUrls.dbosUrl, (label) => `${label}, DBOS.runStep per step`],
          ["langgraph-sync", peerUrls.graphUrl, (label) => `${label}, node per step, "sync"`],
          ["langgraph-async", peerUrls.graphUrl, (label) => `${label}, node per step, "async"`],
        ] as [SystemName, string, (label: string) => string][])
      : []),
  ];
  for (const [system, url, name] of seqSystems) {
    const child = new Child("system", ["--system", system, "--url", url]);
    const { label } = await child.next("system");
    systems.push({ name: name(label), url, child });
  }
  const rounds: Series[][] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      process.stderr.write(`1. sequential, round ${round + 1}/${ROUNDS}\n`);
      const series = await bareCommits(cairnUrl, STEPS, round === 0 ? WARM_UP : 0);
      for (const system of systems) {
        const steps = (n: number) => {
          const done = system.child.next("steps");
          system.child.send({ kind: "steps", steps: n });
          return done;
        };
        if (round === 0) await steps(WARM_UP);
        const server0 = await serverCpu(databaseOf(system.url));
        const { us, cpuUs } = await steps(STEPS);
        const serverUs = (serverCpuSpent(server0, await serverCpu(databaseOf(system.url))) * 1000) / STEPS;
        series.push({ name: system.name, us, cpuUs, serverUs });
      }
      rounds.push(series);
    }
  } finally {
    for (const system of systems) await system.child.stop();
  }
  return rounds;
}

function printSequential({ STEPS, ROUNDS, WARM_UP }: Settings, rounds: Series[][]): void {
  console.log(
    `1. Sequential: one run of ${int(STEPS)} trivial steps per system and round, ${ROUNDS} rounds (each system once` +
      ` per round, in turn; a warm-up run of ${int(WARM_UP)} first), each system in a process of its own`,
  );
  printSteps(rounds);
  console.log(
    "   µs/step: mean of the median round; p50/p90/p99: of the gaps between consecutive step completions, all rounds;\n" +
      "   × commit: median over rounds of the system's mean over that round's bare synchronous commit (first row);\n" +
      "   CPU µs/step, median round: node = the system's process (client, runtime, driver); server = the PostgreSQL backends\n" +
      "   of the system's database (/proc, 10 ms ticks).\n" +
      "   bare commit: one INSERT of a small row into a fresh table, each its own transaction, over one pg connection.\n" +
      '   cairn "machine": one fenced journal insert per step (the result of step i rides with the start record of step i+1),\n' +
      '   committed with synchronous_commit=on; "process": the same with synchronous_commit=off.\n' +
      "   DBOS: one INSERT … COMMIT of the step's output per step. LangGraph: a one-node graph looping N times, so a\n" +
      "   step is a super-step: putWrites (BEGIN, INSERT, COMMIT) then put (BEGIN, blob upserts, checkpoint, COMMIT);\n" +
      '   "sync" waits for the checkpoint before the next step, "async" (LangGraph\'s default) does not.',
  );
  const machine = median(
    rounds.map((r) => mean(r.find((s) => s.name.endsWith('"machine"'))?.us ?? []) / mean(r[0]?.us ?? [])),
  );
  console.log(
    `   goal: cairn "machine" within 2x of one synchronous commit: ${machine <= 2 ? "met" : "MISSED"} (${machine.toFixed(2)}x)\n`,
  );
}
