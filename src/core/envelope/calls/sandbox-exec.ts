import { SandboxLostError } from "../../errors.ts";
import type { RunEventBody } from "../../events.ts";
import type { Sandbox } from "../../sandbox.ts";
import type { SandboxExecOptions, SandboxExecResult } from "../../sandbox-handle.ts";
import type { SandboxSlot } from "../sandbox-slot.ts";
import type { StepExecution } from "../step-attempt.ts";

/** How long an exec goes without output or a live answer from its sandbox before it counts as lost. */
export const DEFAULT_SANDBOX_HEARTBEAT_MS = 30_000;
/** At most one heartbeat a second is journaled (each output chunk re-arms the timer in memory). */
const JOURNALED_BEAT_MS = 1000;

/** What one attempt of an exec step needs. */
export interface ExecAttempt {
  slot: SandboxSlot;
  runId: string;
  command: string | readonly string[];
  options: SandboxExecOptions;
  attempt: StepExecution;
  emit(event: RunEventBody): void;
}

/**
 * One attempt of `exec` (DESIGN §4, *Sandboxes*): the command runs in the slot's live sandbox
 * (restored first when it was lost) with its whole output written to
 * `<logDir>/<runId>/<seq>.<attempt>.log` and streamed to the run's live events. While output
 * arrives, or while the sandbox answers that it is live, the attempt heartbeats; once neither has
 * happened for `heartbeatTimeoutMs` the command's tree is killed and the attempt fails as a lost
 * sandbox, as it does when the command was killed from outside and its sandbox is gone. The
 * step's abort (its timeout, a cancel) kills the tree. A non-zero exit is a result.
 */
export async function execAttempt(a: ExecAttempt): Promise<SandboxExecResult> {
  const { slot, attempt } = a;
  const sandbox = await slot.live(attempt);
  const logPath = `${slot.place.logDir}/${safeSegment(a.runId)}/${attempt.seq}.${attempt.attempt}.log`;
  const heartbeatMs = a.options.heartbeatTimeoutMs ?? DEFAULT_SANDBOX_HEARTBEAT_MS;
  const watch = new Watchdog(sandbox, heartbeatMs, attempt);
  const { seq, attempt: n } = attempt;
  try {
    const result = await sandbox.exec(a.command, {
      ...(a.options.env ? { env: a.options.env } : {}),
      ...(a.options.cwd !== undefined ? { cwd: a.options.cwd } : {}),
      ...(a.options.stdin !== undefined ? { stdin: a.options.stdin } : {}),
      signal: AbortSignal.any([attempt.signal, watch.signal]),
      logPath,
      onOutput: ({ stream, text }) => {
        watch.beat();
        a.emit({ type: "sandbox.output", seq, attempt: n, sandbox: slot.name, stream, text });
      },
    });
    if (watch.signal.aborted) throw watch.signal.reason;
    if (result.aborted && attempt.signal.aborted) throw attempt.signal.reason;
    // A command whose sandbox went while it ran (killed from outside, its folder removed) has no
    // result worth keeping, whatever its exit code says.
    if ((await sandbox.status()) !== "live") {
      const ended = result.signal ?? `exit code ${result.exitCode}`;
      throw lostError(slot, sandbox, `it is gone, and its command ended with ${ended}`);
    }
    return {
      exitCode: result.exitCode,
      signal: result.signal,
      tail: result.tail,
      outputBytes: result.outputBytes,
      logPath,
      durationMs: Math.round(result.durationMs),
    };
  } finally {
    watch.stop();
  }
}

/**
 * The heartbeat of one exec: beaten by output and by the sandbox answering live (asked every third
 * of the timeout); fires its signal, with a `SandboxLostError`, once the timeout passes unbeaten.
 */
class Watchdog {
  readonly #controller = new AbortController();
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #attempt: StepExecution;
  #last = performance.now();
  #journaled = 0;
  #asking = false;

  constructor(sandbox: Sandbox, timeoutMs: number, attempt: StepExecution) {
    this.#attempt = attempt;
    const every = Math.max(10, Math.min(timeoutMs / 3, 5000));
    this.#timer = setInterval(() => {
      if (performance.now() - this.#last > timeoutMs) {
        this.#controller.abort(
          new SandboxLostError(
            `sandbox ${sandbox.info.id} (label "${sandbox.info.label}") sent no heartbeat for ${timeoutMs} ms: no output, and it did not answer live`,
            sandbox.info.id,
          ),
        );
        return;
      }
      if (this.#asking) return;
      this.#asking = true;
      void sandbox
        .status()
        .then((status) => {
          if (status === "live") this.beat();
        })
        .catch(() => undefined)
        .finally(() => {
          this.#asking = false;
        });
    }, every);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  beat(): void {
    if (this.#controller.signal.aborted) return;
    const now = performance.now();
    this.#last = now;
    if (now - this.#journaled >= JOURNALED_BEAT_MS) {
      this.#journaled = now;
      this.#attempt.heartbeat();
    }
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

function lostError(slot: SandboxSlot, sandbox: Sandbox, why: string): SandboxLostError {
  return new SandboxLostError(
    `sandbox "${slot.name}" (${sandbox.info.id}, label "${slot.label}") was lost: ${why}`,
    sandbox.info.id,
  );
}

/** A run id as one folder name (a `/` or `..` in a user's run id cannot lead the log elsewhere). */
function safeSegment(id: string): string {
  const safe = id.replace(/[^A-Za-z0-9._-]/g, "_");
  return safe === "." || safe === ".." ? `_${safe}` : safe;
}
