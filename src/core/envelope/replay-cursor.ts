import type { StepIdentity } from "../context.ts";
import { type ReplayDivergenceError, StepLimitError } from "../errors.ts";
import type { StepKind, StepRecord } from "../records.ts";
import { checkText, isStorableText } from "../text.ts";
import { divergenceError } from "./divergence.ts";
import type { EnvelopeHost } from "./envelope-host.ts";
import { isCleanupStep } from "./sandbox-slot.ts";

/** Longest name a step takes (a tool, a signal, a domain entity, an approval's action, a model). */
const MAX_STEP_NAME_LENGTH = 512;

/** A step whose number is taken: its seq, and its record when the journal holds one (a replay). */
export interface BegunStep {
  readonly seq: number;
  readonly recorded: StepRecord | undefined;
}

/**
 * Where a workflow's execution stands in its journal (DESIGN §4). Each `ctx` call takes the next
 * step number synchronously, so concurrent steps (`Promise.all`) get the same numbers on every
 * replay, and meets the step the journal holds at that number: the same kind and name, or a
 * divergence. It holds the run to its step limit.
 */
export class ReplayCursor {
  readonly #runId: string;
  readonly #host: EnvelopeHost;
  readonly #journal: Map<number, StepRecord>;
  /** The journal, in seq order. */
  readonly history: readonly StepRecord[];
  /** The highest seq the journal holds (0 for none). */
  readonly maxRecordedSeq: number;
  /** The calls of this execution, for a divergence report. */
  readonly #calls: StepIdentity[] = [];
  readonly #onDiverged: (error: ReplayDivergenceError) => void;
  #seq = 0;
  #diverged: ReplayDivergenceError | undefined;

  constructor(options: {
    runId: string;
    journal: readonly StepRecord[];
    host: EnvelopeHost;
    /** Called once, when a call meets another step than the journal holds (the run is stopped). */
    onDiverged: (error: ReplayDivergenceError) => void;
  }) {
    this.#runId = options.runId;
    this.#host = options.host;
    this.#onDiverged = options.onDiverged;
    // A run's cleanup steps come after its end: no code calls them, and a resumed run may take their seqs.
    this.history = options.journal.filter((s) => !isCleanupStep(s)).sort((a, b) => a.seq - b.seq);
    this.#journal = new Map(this.history.map((s) => [s.seq, s]));
    this.maxRecordedSeq = this.history.reduce((m, s) => Math.max(m, s.seq), 0);
  }

  /** The last step number taken (0 before the first call). */
  get seq(): number {
    return this.#seq;
  }

  /** Set once a call met another step than the journal holds. */
  get diverged(): ReplayDivergenceError | undefined {
    return this.#diverged;
  }

  /** Whether the next call replays a step an earlier execution recorded. */
  get isReplaying(): boolean {
    return this.#seq < this.maxRecordedSeq;
  }

  /** The journal's record of the step the next call will take, if it holds one. */
  next(): StepRecord | undefined {
    return this.#journal.get(this.#seq + 1);
  }

  /**
   * Takes the next step number for a call of `kind` `name` and matches it against the journal:
   * throws `StepLimitError` past the run's `maxSteps` (warning at 80 %), and the divergence (the
   * run stopped) when the journal holds another step at that number.
   */
  take(kind: StepKind, name: string): BegunStep {
    // A name is stored as text (a signal's name, a domain's entity, an approval's action).
    if (!isStorableText(name) || name.length > MAX_STEP_NAME_LENGTH) {
      checkText(name, `the name of ${kind} step "${name}" (run ${this.#runId})`, { maxLength: MAX_STEP_NAME_LENGTH });
    }
    const seq = ++this.#seq;
    const maxSteps = this.#host.maxSteps;
    if (seq > maxSteps) {
      throw new StepLimitError(
        `run ${this.#runId} reached its limit of ${maxSteps} steps; carry the state over with ctx.continueAsNew(state) to start a fresh run, or raise the runtime's maxSteps`,
      );
    }
    if (seq === Math.floor(maxSteps * 0.8) && seq > this.maxRecordedSeq) {
      this.#host.log(
        "warn",
        `run ${this.#runId} has taken ${seq} of its ${maxSteps} steps; use ctx.continueAsNew(state) before it reaches the limit`,
        { runId: this.#runId, seq },
      );
    }
    this.#calls.push({ seq, kind, name });
    const recorded = this.#journal.get(seq);
    if (recorded && (recorded.kind !== kind || recorded.name !== name)) {
      const error = divergenceError({
        runId: this.#runId,
        seq,
        recorded,
        called: { seq, kind, name },
        history: this.history,
        calls: this.#calls,
      });
      this.#diverged = error;
      this.#onDiverged(error);
      throw error;
    }
    return { seq, recorded };
  }

  /**
   * The divergence of an execution that ended before it reached every completed step of its
   * journal (the code changed under the run), or undefined. A compensation's own steps come after
   * the workflow's: the workflow never calls them.
   */
  unreached(): ReplayDivergenceError | undefined {
    const unreached = this.history.find(
      (s) => s.seq > this.#seq && s.status !== "started" && s.effect?.compensates === undefined,
    );
    if (!unreached) return undefined;
    return divergenceError({
      runId: this.#runId,
      seq: unreached.seq,
      recorded: unreached,
      called: undefined,
      history: this.history,
      calls: this.#calls,
    });
  }
}
