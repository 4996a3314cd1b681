import type { EffectRecord, Json, RunRecord } from "../core/records.ts";
import type { RunState } from "../core/run-state.ts";
import type { ScheduleRecord } from "../core/schedules.ts";
import type { Role } from "./roles.ts";

/**
 * The bodies of the HTTP API's answers that are not a stored record as it is (those are
 * `core/records.ts`: `{ run }`, `{ transitions }`, `{ steps }`, `{ waits }`). Timestamps are
 * epoch milliseconds. The server's zod schemas (`server/schemas.ts`) document them in
 * /openapi.json.
 */

/** `GET /api/me`: who the token is. */
export interface PrincipalInfo {
  subject: string;
  roles: Role[];
  /** `none` when the server has no tokens (every request is the local admin). */
  auth: "token" | "none";
  /**
   * A development server without tokens (`cairn dev`) that acts as whoever a request's
   * `X-Cairn-As` (subject) and `X-Cairn-Role` (role) headers name: the dashboard's identity switcher.
   */
  switchable?: boolean;
}

/** An agent the server knows (`GET /api/agents` answers `{ agents: AgentInfo[] }`). */
export interface AgentInfo {
  name: string;
  description: string;
  version: string;
  workflows: string[];
  /** The JSON Schema of each workflow's input, for the workflows that declare one (the agent's `inputs`). */
  inputs: { [workflow: string]: Json };
  /** The approvers the agent's tools declare (`approval.approvers`), each once. */
  approvers: string[];
}

/** A step that carries an effect (`GET /api/runs/:id/effects` answers `{ effects: EffectEntry[] }`). */
export interface EffectEntry {
  seq: number;
  name: string;
  effect: EffectRecord;
}

/** `GET /api/runs`: one page of runs, newest first. */
export interface RunPage {
  runs: RunRecord[];
  /** Pass as `cursor` for the next page; null when there are no more. A page may be short (even empty) with a cursor: follow it. */
  nextCursor: string | null;
}

/**
 * A schedule as `GET /api/schedules` (`{ schedules: ScheduleInfo[] }`, by id) and the routes that
 * change one (`{ schedule }`) answer: its record and its next fire times.
 */
export interface ScheduleInfo extends ScheduleRecord {
  /** The next ten fire times (epoch ms), from the next tick on; empty while paused. */
  nextTimes: number[];
  /**
   * The run `lastRunId` names (the last tick's that started one, or a trigger's) as it is now:
   * its state and the tick it was started for (ISO 8601); null when none, or pruned.
   */
  lastRun: { id: string; state: RunState; scheduledFor: string | null } | null;
}

/** `POST /api/schedules/:id/trigger` (202): the tick marked, and its run once this server's worker started it. */
export interface ScheduleTrigger {
  runId: string | null;
  tickAt: number;
}
