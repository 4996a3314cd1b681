import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { now, type ToChild, type ToParent } from "./ipc.ts";
import { POOL } from "./options.ts";

/** The bench's entry, which every child process runs in the role it is given. */
const ENTRY = fileURLToPath(new URL("../postgres.ts", import.meta.url));

/**
 * The V8 flags of every child process, whatever system it runs. The batches of the systems are
 * interleaved, so each process idles for seconds between two of its batches while the others run;
 * after about 8 s of little allocation, V8's memory reducer shrinks the heap and the young
 * generation, and the process's next batch pays for growing them back, in scavenges every few
 * milliseconds. A process under steady load never meets that, so the bench turns the reducer off
 * for all of them alike. Measured on this 2-core VM (2026-12-01, two full runs each way): a Cairn
 * worker spent 71–83 ms of CPU in a median batch with it and 47–53 ms without, and its batch took
 * 110–119 rather than 93–97 ms; DBOS's 900–1,000 ms batches did not move.
 */
export function childV8Flags(): string[] {
  // Asked of this node once, in the process that starts the children.
  childFlags ??= execFileSync(process.execPath, ["--v8-options"], { encoding: "utf8" }).includes("--memory-reducer ")
    ? ["--no-memory-reducer"]
    : [];
  return childFlags;
}
let childFlags: string[] | undefined;

/** A child process of the bench in another role, and the messages it sends. */
export class Child {
  readonly process: ChildProcess;
  readonly #handlers = new Set<(m: ToParent) => void>();
  #exited: Promise<void>;

  constructor(role: string, args: string[]) {
    this.process = fork(ENTRY, ["--role", role, "--pool", String(POOL), ...args], {
      // e.g. CAIRN_BENCH_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the workers.
      execArgv: [
        "--import",
        "tsx",
        ...childV8Flags(),
        ...(process.env.CAIRN_BENCH_CHILD_NODE_ARGS?.split(" ").filter(Boolean) ?? []),
      ],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.process.on("message", (m: ToParent) => {
      if (m.kind === "error") console.error(`child ${this.process.pid}: ${m.message}`);
      for (const h of [...this.#handlers]) h(m);
    });
    this.#exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    children.add(this);
  }

  on(handler: (m: ToParent) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  next<K extends ToParent["kind"]>(kind: K, test: (m: Extract<ToParent, { kind: K }>) => boolean = () => true) {
    return new Promise<Extract<ToParent, { kind: K }>>((resolve, reject) => {
      const onExit = () => reject(new Error(`child ${this.process.pid} exited while ${kind} was awaited`));
      this.process.once("exit", onExit);
      const off = this.on((m) => {
        if (m.kind === kind && test(m as Extract<ToParent, { kind: K }>)) {
          off();
          this.process.off("exit", onExit);
          resolve(m as Extract<ToParent, { kind: K }>);
        }
      });
    });
  }

  send(message: ToChild): void {
    this.process.send(message);
  }

  /** Estimated offset of the child's clock from this process's (ms), from the quickest of 20 pings. */
  async clockOffset(): Promise<{ offset: number; rtt: number }> {
    let best = { offset: Number.NaN, rtt: Number.POSITIVE_INFINITY };
    for (let i = 0; i < 20; i++) {
      const t0 = now();
      const reply = this.next("clock");
      this.send({ kind: "clock" });
      const { at } = await reply;
      const t1 = now();
      if (t1 - t0 < best.rtt) best = { offset: at - (t0 + t1) / 2, rtt: t1 - t0 };
    }
    return best;
  }

  /** CPU time the child has used, ms. */
  async cpu(): Promise<number> {
    const reply = this.next("cpu");
    this.send({ kind: "cpu" });
    return (await reply).ms;
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.connected) this.send({ kind: "stop" });
    await this.#exited;
    children.delete(this);
  }
}
/** The child processes alive, killed at the end if they have not exited. */
export const children = new Set<Child>();
