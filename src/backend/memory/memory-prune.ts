import type { RunRecord, SignalRecord, StepRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import type { PruneRunsRequest, PruneRunsResult } from "../contract/prune-store.ts";
import { checkPruneRequest, isPrunable } from "../rules/prune-rules.ts";
import type { MemoryFeed } from "./memory-feed.ts";

/** The maps of `InMemoryBackend` that a prune deletes from. */
export interface MemoryTables {
  runs: Map<string, RunRecord>;
  keys: Map<string, string>;
  transitions: Map<string, TransitionRecord[]>;
  steps: Map<string, Map<number, StepRecord>>;
  waits: Map<string, Map<string, WaitRecord>>;
  signals: Map<string, Map<string, SignalRecord>>;
  feed: MemoryFeed;
}

/**
 * `pruneRuns` of `InMemoryBackend` (`PruneStore`): the prunable runs in id order, at most the
 * limit, deleted with their transitions (left as holes in the feed, so cursors keep their
 * places), steps, waits, signals and key.
 */
export function pruneMemoryRuns(tables: MemoryTables, request: PruneRunsRequest): PruneRunsResult {
  checkPruneRequest(request);
  const children = new Map<string, RunRecord[]>();
  for (const run of tables.runs.values()) {
    if (run.parentRunId !== null) children.set(run.parentRunId, [...(children.get(run.parentRunId) ?? []), run]);
  }
  const after = request.dryRun ? request.after : undefined;
  const runIds = [...tables.runs.values()]
    .filter((run) => after === undefined || run.id > after)
    .filter((run) =>
      isPrunable(
        {
          run,
          endedAt: tables.transitions.get(run.id)?.at(-1)?.at ?? run.updatedAt,
          parent: run.parentRunId === null ? undefined : tables.runs.get(run.parentRunId),
          children: children.get(run.id) ?? [],
        },
        request,
      ),
    )
    .map((run) => run.id)
    .sort()
    .slice(0, request.limit);
  if (!request.dryRun) for (const runId of runIds) forget(tables, runId);
  return { runIds };
}

function forget(tables: MemoryTables, runId: string): void {
  const run = tables.runs.get(runId) as RunRecord;
  if (run.key !== null) {
    const keyId = `${run.agent}\u0000${run.workflow}\u0000${run.key}`;
    if (tables.keys.get(keyId) === runId) tables.keys.delete(keyId);
  }
  tables.feed.forget(tables.transitions.get(runId) ?? []);
  tables.runs.delete(runId);
  tables.transitions.delete(runId);
  tables.steps.delete(runId);
  tables.waits.delete(runId);
  tables.signals.delete(runId);
}
