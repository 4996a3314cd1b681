import type { CairnError } from "../errors.ts";
import type { PolicyCall } from "../policies.ts";
import type { StepKind, StepRecord } from "../records.ts";
import { serializeError } from "../serialize.ts";
import type { EnvelopeOutcome } from "./envelope-outcome.ts";
import type { Governor } from "./governor.ts";

/** An approval a call needs before it runs (a policy's, or the tool's own). */
export interface NeededApproval {
  action: string;
  approvers: readonly string[];
  expiresInMs: number;
}

/**
 * The governance of one execution (DESIGN §6), over its {@link Governor}: the policies asked
 * before every tool, model, domain and spawn call, the budget checked before every new step. A
 * refusal ends the run BLOCKED whatever the workflow does with the error it is thrown; once
 * blocked, every call is refused with the same error. `governedCall` is the path calls take.
 */
export class Governance {
  readonly governor: Governor;
  /** Ends the execution (with the refusal, as `failed`). */
  readonly #end: (outcome: EnvelopeOutcome) => void;
  #blocked: CairnError | undefined;

  constructor(governor: Governor, end: (outcome: EnvelopeOutcome) => void) {
    this.governor = governor;
    this.#end = end;
  }

  /** The refusal that ended the run, if one did. */
  get blocked(): CairnError | undefined {
    return this.#blocked;
  }

  /** Ends the run with `error` (the worker records BLOCKED) and throws it. */
  block(error: CairnError): never {
    if (!this.#blocked) {
      this.#blocked = error;
      this.#end({ kind: "failed", error: serializeError(error) });
    }
    throw error;
  }

  /** Asks the policies about a call whose step will be `seq`; see `Governor.ask`. */
  ask(kind: PolicyCall["kind"], name: string, args: unknown, seq: number): NeededApproval | undefined {
    if (this.#blocked) throw this.#blocked;
    try {
      return this.governor.ask(kind, name, args, seq);
    } catch (error) {
      return this.block(error as CairnError);
    }
  }

  /** A new step (not one the journal holds) of `kind` starts now: the budget is checked, then it counts. */
  admit(kind: StepKind, now: number): void {
    const exceeded = this.governor.check(kind, now);
    if (exceeded) this.block(exceeded);
    this.governor.started(kind);
  }

  /**
   * A model call refused before it is made when its declared maximum output could overshoot the
   * cost budget; `provider` is the provider's name (`<vendor>:<model>`), when known.
   */
  admitModelCall(provider: string | undefined, maxOutputTokens: number, now: number): void {
    const exceeded = this.governor.check("llm", now, {
      name: provider?.slice(provider.indexOf(":") + 1),
      maxOutputTokens,
    });
    if (exceeded) this.block(exceeded);
  }

  /** Settles what a finished step used. */
  settled(step: StepRecord): void {
    this.governor.settled(step);
  }
}
