import type { RunRecord } from "../../src/api/http-api.ts";
import { CREATED_WINDOWS, createdSince, type RunFilter } from "./api.ts";

/** The runs table's filter, kept in the URL's query so that a bookmark keeps it. */

/** The filter a URL's query names (unknown `created` windows are left out). */
export function filterOf(query: URLSearchParams): RunFilter {
  const filter: RunFilter = {};
  const agent = query.get("agent");
  const workflow = query.get("workflow");
  const state = query.get("state");
  const pausedReason = query.get("pausedReason");
  const created = query.get("created");
  const key = query.get("key");
  if (agent) filter.agent = agent;
  if (workflow) filter.workflow = workflow;
  if (state) filter.state = state.split(",").filter(Boolean);
  if (pausedReason) filter.pausedReason = pausedReason;
  if (key) filter.key = key;
  if (created && created in CREATED_WINDOWS) filter.created = created;
  return filter;
}

/** The query that names `filter`, for the URL. */
export function queryOf(filter: RunFilter): URLSearchParams {
  const q = new URLSearchParams();
  if (filter.agent) q.set("agent", filter.agent);
  if (filter.workflow) q.set("workflow", filter.workflow);
  if (filter.state?.length) q.set("state", filter.state.join(","));
  if (filter.pausedReason) q.set("pausedReason", filter.pausedReason);
  if (filter.key) q.set("key", filter.key);
  if (filter.created) q.set("created", filter.created);
  return q;
}

/** Whether `run` belongs in the table as filtered. */
export function matches(run: RunRecord, filter: RunFilter): boolean {
  if (filter.agent && run.agent !== filter.agent) return false;
  if (filter.workflow && run.workflow !== filter.workflow) return false;
  if (filter.state?.length && !filter.state.includes(run.state)) return false;
  if (filter.pausedReason && run.pausedReason !== filter.pausedReason) return false;
  if (filter.key && run.key !== filter.key) return false;
  const since = createdSince(filter);
  if (since !== undefined && run.createdAt < since) return false;
  return true;
}
