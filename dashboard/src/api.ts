import {
  type AgentInfo,
  type EffectEntry,
  type Json,
  type PrincipalInfo,
  type RunPage,
  type RunRecord,
  readSse,
  type ScheduleInfo,
  type ScheduleTrigger,
  type StepRecord,
  type TransitionRecord,
  type WaitRecord,
} from "../../src/api/http-api.ts";

/**
 * The dashboard's client of the HTTP API (`/api/...`, served by the same server). A bearer token,
 * when the user gave one, is kept in this tab's sessionStorage (not localStorage, which every tab
 * and a later visit would share) and sent only in the Authorization header, the live streams
 * included: they are read with fetch, never with a token in the URL (the server refuses one).
 */

const TOKEN_KEY = "cairn.token";
const IDENTITY_KEY = "cairn.identity";

/** An operator's decision on an effect of unknown outcome, as `POST …/reconcile` takes it. */
export interface Reconciliation {
  outcome: "applied" | "not_applied";
  /** For `applied`: the tool's result as the workflow receives it. */
  result?: Json;
  /** For `applied`: the proof (a bank reference, a ticket id). */
  receipt?: Json;
  note?: string;
}

/**
 * Who the dashboard acts as on a development server that lets it choose (`cairn dev`, `/api/me`
 * says `switchable`): sent as `X-Cairn-As` and `X-Cairn-Role`, kept in this tab's sessionStorage.
 */
export interface Identity {
  subject: string;
  /** One role; none keeps the server's (admin). */
  role?: string;
}

export function getIdentity(): Identity | null {
  try {
    const text = sessionStorage.getItem(IDENTITY_KEY);
    const value = text ? (JSON.parse(text) as Identity) : null;
    return value && typeof value.subject === "string" ? value : null;
  } catch {
    return null;
  }
}

/** Acts as `identity` from now on (null: as the server's own subject); pages reload their data. */
export function setIdentity(identity: Identity | null): void {
  try {
    if (identity) sessionStorage.setItem(IDENTITY_KEY, JSON.stringify(identity));
    else sessionStorage.removeItem(IDENTITY_KEY);
  } catch {
    // Storage refused: the choice is lost on reload.
  }
  for (const listener of authListeners) listener(false);
}

function identityHeaders(): Record<string, string> {
  const identity = getIdentity();
  if (!identity) return {};
  return {
    ...(identity.subject && { "x-cairn-as": identity.subject }),
    ...(identity.role && { "x-cairn-role": identity.role }),
  };
}

/** Who the token is (`/api/me`). */
export type Me = PrincipalInfo;
export type { AgentInfo, EffectEntry, ScheduleInfo, ScheduleTrigger };

/** An error the API answered with (`{ error: { code, message } }`), or a network failure. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

export function getToken(): string {
  try {
    // An earlier dashboard kept the token in localStorage: moved to this tab's session, and gone
    // from the storage every tab and every later visit share.
    const old = localStorage.getItem(TOKEN_KEY);
    if (old !== null) {
      localStorage.removeItem(TOKEN_KEY);
      if (!sessionStorage.getItem(TOKEN_KEY)) sessionStorage.setItem(TOKEN_KEY, old);
    }
  } catch {
    // Storage refused (private mode, a sandbox).
  }
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

export function setToken(token: string): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage refused (private mode): the token lasts for this page only.
  }
  memoryToken = token;
  for (const listener of authListeners) listener(false);
}

let memoryToken: string | null = null;
function token(): string {
  memoryToken ??= getToken();
  return memoryToken;
}

/** Told when a request is refused for want of (valid) credentials, and when a token is set. */
const authListeners = new Set<(needed: boolean) => void>();
export function onAuth(listener: (needed: boolean) => void): () => void {
  authListeners.add(listener);
  return () => authListeners.delete(listener);
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json", ...identityHeaders() };
  const t = token();
  if (t) headers.authorization = `Bearer ${t}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new ApiError(0, "NETWORK", `cannot reach the server (${(error as Error).message})`);
  }
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    if (response.status === 401) for (const listener of authListeners) listener(true);
    const error = (data as { error?: { code?: string; message?: string } } | null)?.error;
    throw new ApiError(
      response.status,
      error?.code ?? `HTTP_${response.status}`,
      error?.message ?? (text.slice(0, 200) || `${response.status} ${response.statusText}`),
    );
  }
  return data as T;
}

const get = <T>(path: string) => request<T>("GET", path);
const post = <T>(path: string, body: unknown = {}) => request<T>("POST", path, body);
const enc = encodeURIComponent;

export interface RunFilter {
  agent?: string;
  workflow?: string;
  state?: string[];
  pausedReason?: string;
  /** Runs started with this idempotency key. */
  key?: string;
  /** Runs created within this window up to now (a key of {@link CREATED_WINDOWS}). */
  created?: string;
}

/** The "Created" filter's windows: a key kept in the URL, so a bookmark keeps meaning "the last hour". */
export const CREATED_WINDOWS: Readonly<Record<string, { label: string; ms: number }>> = {
  "1h": { label: "last hour", ms: 3_600_000 },
  "24h": { label: "last 24 hours", ms: 86_400_000 },
  "7d": { label: "last 7 days", ms: 7 * 86_400_000 },
  "30d": { label: "last 30 days", ms: 30 * 86_400_000 },
};

/** The earliest creation time the filter lets through (epoch ms), or undefined for any. */
export function createdSince(filter: RunFilter): number | undefined {
  const window = filter.created === undefined ? undefined : CREATED_WINDOWS[filter.created];
  return window === undefined ? undefined : Date.now() - window.ms;
}

export function listRuns(filter: RunFilter, cursor?: string | null, limit = 50) {
  const q = new URLSearchParams();
  if (filter.agent) q.set("agent", filter.agent);
  if (filter.workflow) q.set("workflow", filter.workflow);
  if (filter.state?.length) q.set("state", filter.state.join(","));
  if (filter.pausedReason) q.set("pausedReason", filter.pausedReason);
  if (filter.key) q.set("key", filter.key);
  const since = createdSince(filter);
  if (since !== undefined) q.set("since", String(since));
  q.set("limit", String(limit));
  if (cursor) q.set("cursor", cursor);
  return get<RunPage>(`/api/runs?${q}`);
}

export const api = {
  me: () => get<Me>("/api/me"),
  agents: () => get<{ agents: AgentInfo[] }>("/api/agents"),
  startRun: (body: { agent: string; workflow: string; input: Json; key?: string }) =>
    post<{ run: RunRecord; created: boolean }>("/api/runs", body),
  run: (id: string) => get<{ run: RunRecord }>(`/api/runs/${enc(id)}`),
  transitions: (id: string) => get<{ transitions: TransitionRecord[] }>(`/api/runs/${enc(id)}/transitions`),
  steps: (id: string) => get<{ steps: StepRecord[] }>(`/api/runs/${enc(id)}/steps`),
  effects: (id: string) => get<{ effects: EffectEntry[] }>(`/api/runs/${enc(id)}/effects`),
  waits: (id: string) => get<{ waits: WaitRecord[] }>(`/api/runs/${enc(id)}/waits`),
  contract: (id: string) => get<Json>(`/api/runs/${enc(id)}/contract`),
  signal: (id: string, name: string, payload: Json) => post(`/api/runs/${enc(id)}/signal`, { name, payload }),
  answer: (id: string, waitId: string, value: Json) =>
    post(`/api/runs/${enc(id)}/waits/${enc(waitId)}/answer`, { value }),
  approve: (id: string, waitId: string, digest: string, note?: string) =>
    post(`/api/runs/${enc(id)}/approvals/${enc(waitId)}/approve`, note ? { digest, note } : { digest }),
  deny: (id: string, waitId: string, digest: string, note?: string) =>
    post(`/api/runs/${enc(id)}/approvals/${enc(waitId)}/deny`, note ? { digest, note } : { digest }),
  cancel: (id: string, reason?: string) => post(`/api/runs/${enc(id)}/cancel`, reason ? { reason } : {}),
  resume: (id: string) => post(`/api/runs/${enc(id)}/resume`, {}),
  fork: (id: string, fromStep: number) =>
    post<{ run: RunRecord; fromStep: number }>(`/api/runs/${enc(id)}/fork`, { fromStep }),
  rerun: (id: string) => post<{ run: RunRecord; fromStep: number }>(`/api/runs/${enc(id)}/rerun`, {}),
  reconcile: (id: string, effectId: string, decision: Reconciliation) =>
    post(`/api/runs/${enc(id)}/effects/${enc(effectId)}/reconcile`, decision),
  accept: (id: string, note?: string) => post(`/api/runs/${enc(id)}/accept`, note ? { note } : {}),
  reject: (id: string, note?: string) => post(`/api/runs/${enc(id)}/reject`, note ? { note } : {}),
  schedules: () => get<{ schedules: ScheduleInfo[] }>("/api/schedules"),
  pauseSchedule: (id: string) => post<{ schedule: ScheduleInfo }>(`/api/schedules/${enc(id)}/pause`, {}),
  resumeSchedule: (id: string) => post<{ schedule: ScheduleInfo }>(`/api/schedules/${enc(id)}/resume`, {}),
  triggerSchedule: (id: string) => post<ScheduleTrigger>(`/api/schedules/${enc(id)}/trigger`, {}),
};

/** The parsed data of an SSE event, or null when it is not a JSON object. */
export function eventData(text: string): Record<string, unknown> | null {
  try {
    const data = JSON.parse(text) as unknown;
    return data && typeof data === "object" ? (data as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The event types the dashboard listens to (named SSE events, or `message` with a `type`). The
 * all-runs stream sends `ready` first (`resumed: false` when it could not resume: reload); a run's
 * stream sends `end` when the run settles and then closes: the page stops reading then.
 */
export const EVENT_TYPES = [
  "ready",
  "transition",
  "step",
  "model.text",
  "model.retry",
  "model.start",
  "model.end",
  "step.rate_limited",
  "end",
] as const;

export type LiveStatus = "connecting" | "live" | "reconnecting" | "final";

/**
 * Subscribes to a live stream: `onEvent(type, data)` for each event; `onStatus` follows the
 * connection, and `onReopen` fires when it comes back after a break (refetch what may be missed).
 * The stream is read with fetch (the token in the Authorization header, as every request); when
 * it breaks or is refused it is opened again after a pause, doubling up to 30 s, from the last
 * event id (Last-Event-ID), as an EventSource would.
 */
export function subscribe(
  path: string,
  handlers: {
    onEvent: (type: string, data: Record<string, unknown>) => void;
    onStatus?: (status: LiveStatus) => void;
    onReopen?: () => void;
    /** Resume after this event id. */
    from?: string;
  },
): () => void {
  const controller = new AbortController();
  const { signal } = controller;
  let lastId = handlers.from ?? "";
  let readies = 0;
  let broken = false;
  let delay = 2000;
  const known = new Set<string>(EVENT_TYPES);
  const read = async (): Promise<void> => {
    while (!signal.aborted) {
      handlers.onStatus?.(broken ? "reconnecting" : "connecting");
      try {
        const headers: Record<string, string> = { accept: "text/event-stream", ...identityHeaders() };
        const t = token();
        if (t) headers.authorization = `Bearer ${t}`;
        if (lastId) headers["last-event-id"] = lastId;
        const response = await fetch(path, { headers, signal, cache: "no-store" });
        if (!response.ok || !response.body) {
          if (response.status === 401) for (const listener of authListeners) listener(true);
          throw new Error(`the stream answered ${response.status}`);
        }
        delay = 2000;
        handlers.onStatus?.("live");
        if (broken) handlers.onReopen?.();
        broken = false;
        for await (const event of readSse(response.body)) {
          if (event.id) lastId = event.id;
          const data = eventData(event.data);
          if (!data) continue;
          if (event.event === "message") {
            if (typeof data.type === "string") handlers.onEvent(data.type, data);
            continue;
          }
          if (!known.has(event.event)) continue;
          if (event.event === "ready") {
            // The first is the greeting; a later one that could not resume means events were missed.
            if (readies++ > 0 && data.resumed === false) handlers.onReopen?.();
            continue;
          }
          handlers.onEvent(event.event, data);
          if (event.event === "end") {
            controller.abort();
            return;
          }
        }
      } catch {
        if (signal.aborted) return;
      }
      broken = true;
      handlers.onStatus?.("reconnecting");
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, delay);
        signal.addEventListener("abort", done);
      });
      delay = Math.min(delay * 2, 30_000);
    }
  };
  void read();
  return () => controller.abort();
}
