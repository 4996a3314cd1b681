import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { now, type ToChild, type ToParent } from "./ipc.ts";
import { POOL } from "./options.ts";

/** The bench's entry, which every child process runs in the role it is given. */
const ENTRY = fileURLToPath(new URL("../postgres.ts", import.meta.url));

/**
 * The node arguments of every child process beyond `--import tsx`: none but what
 * CAIRN_BENCH_CHILD_NODE_ARGS asks for (to profile, say), printed in the report's header. No V8
 * flag is set for any system: every process runs as node runs it by default, as it is deployed.
 * (Until issue 26 the children ran with V8's memory reducer off, which no deployment does.)
 */
export function childNodeArgs(): string[] {
  return process.env.CAIRN_BENCH_CHILD_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
}

/** A child process of the bench in another role, and the messages it sends. */
export class Child {
  readonly process: ChildProcess;
  readonly #handlers = new Set<(m: ToParent) => void>();
  #exited: Promise<void>;

  constructor(role: string, args: string[]) {
    this.process = fork(ENTRY, ["--role", role, "--pool", String(POOL), ...args], {
      // e.g. CAIRN_BENCH_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the workers.
      execArgv: ["--import", "tsx", ...childNodeArgs()],
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
