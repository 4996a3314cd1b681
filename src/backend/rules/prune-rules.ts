import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import { isTerminal, type RunState } from "../../core/run-state.ts";
import type { PruneRunsRequest } from "../contract/prune-store.ts";

/**
 * The rules of `pruneRuns` (DESIGN §7, "Retention"), shared by every backend: which runs a batch
 * may take. The SQL backends say the same in their statements.
 */

/** The request checked: a limit of 1 or more, a cutoff that is a time, only terminal states. */
export function checkPruneRequest(request: PruneRunsRequest): void {
  if (!(Number.isSafeInteger(request.limit) && request.limit >= 1)) {
    throw new InvalidInputError(`pruneRuns limit must be a whole number, 1 or more (got ${String(request.limit)})`);
  }
  if (!Number.isFinite(request.endedBefore)) {
    throw new InvalidInputError(
      `pruneRuns endedBefore must be a time in milliseconds (got ${String(request.endedBefore)})`,
    );
  }
  const open = request.states.find((state) => !isTerminal(state));
  if (open !== undefined) {
    throw new InvalidInputError(
      `pruneRuns cannot take runs in ${open}: only ended runs are pruned; name terminal states (COMPLETED, FAILED, …)`,
    );
  }
}

/** What a backend knows of a run when it decides whether a batch takes it. */
export interface PruneCandidate {
  run: RunRecord;
  /** When its last transition was written. */
  endedAt: number;
  /** Its parent as stored now (undefined: none, or pruned already). */
  parent: RunRecord | undefined;
  /** The runs it started, as stored now. */
  children: readonly RunRecord[];
}

/**
 * True when a batch may take the run: it is in one of the request's states, of its agent, ended
 * before the cutoff, and its parent and children have all ended (an open run keeps its relatives).
 */
export function isPrunable(candidate: PruneCandidate, request: PruneRunsRequest): boolean {
  const { run } = candidate;
  const states: ReadonlySet<RunState> = new Set(request.states);
  if (!(states.has(run.state) && isTerminal(run.state))) return false;
  if (request.agent !== undefined && run.agent !== request.agent) return false;
  if (!(candidate.endedAt < request.endedBefore)) return false;
  if (candidate.parent && !isTerminal(candidate.parent.state)) return false;
  return candidate.children.every((child) => isTerminal(child.state));
}
