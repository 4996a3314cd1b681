/** What the bench's processes tell each other, and the clock and CPU time they measure with. */

/** Milliseconds on a clock the processes of this machine share (epoch-based, sub-ms). */
export const now = () => performance.timeOrigin + performance.now();

export type ToParent =
  | { kind: "ready" }
  | { kind: "clock"; at: number }
  | { kind: "running"; id: string; at: number }
  | { kind: "resumed"; id: string; at: number }
  /** The runs a worker recorded COMPLETED in one turn of its event loop, one message for them all. */
  | { kind: "completed"; runs: { id: string; at: number }[]; worker: number }
  | { kind: "sent"; id: string; calledAt: number; returnedAt: number }
  | { kind: "cpu"; ms: number }
  | { kind: "system"; label: string }
  | { kind: "steps"; us: number[]; cpuUs: number }
  | { kind: "batch"; ms: number; startedAt: number }
  | { kind: "error"; message: string };
export type ToChild =
  | { kind: "clock" }
  | { kind: "cpu" }
  | { kind: "stop" }
  | { kind: "send"; id: string }
  | { kind: "steps"; steps: number }
  | { kind: "batch" };

/** CPU time this process has used, ms. */
export const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Sends `message` to the parent process (the bench's main one). */
export const send = (message: ToParent) => process.send?.(message);
