import type {
  EffectRecord,
  Json,
  RunRecord,
  StepRecord,
  TransitionRecord,
  WaitRecord,
} from "../../src/core/records.ts";

/**
 * The dashboard's client of the HTTP API (`/api/...`, served by the same server). A bearer token,
 * when the user gave one, is kept in localStorage and sent on every request; EventSource cannot
 * send headers, so the live streams carry it as `?token=`.
 */

const TOKEN_KEY = "cairn.token";

export interface Me {
  subject: string;
  roles: string[];
  auth: "token" | "none";
}

export interface AgentInfo {
  name: string;
  description: string;
  version: string;
  workflows: string[];
}

export interface EffectEntry {
  seq: number;
  name: string;
  effect: EffectRecord;
}

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
    return localStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

export function setToken(token: string): void {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage refused (private mode): the token lasts for this page only.
  }
  memoryToken = token;
  for (const listener of authListeners) listener(false);
}

let memoryToken: string | null = null;
function token(): string {
  return memoryToken ?? getToken();
}

/** Told when a request is refused for want of (valid) credentials, and when a token is set. */
const authListeners = new Set<(needed: boolean) => void>();
export function onAuth(listener: (needed: boolean) => void): () => void {
  authListeners.add(listener);
  return () => authListeners.delete(listener);
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
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
  const since = createdSince(filter);
  if (since !== undefined) q.set("since", String(since));
  q.set("limit", String(limit));
  if (cursor) q.set("cursor", cursor);
  return get<{ runs: RunRecord[]; nextCursor: string | null }>(`/api/runs?${q}`);
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
  reconcile: (id: string, effectId: string, outcome: "applied" | "not_applied", note?: string) =>
    post(`/api/runs/${enc(id)}/effects/${enc(effectId)}/reconcile`, note ? { outcome, note } : { outcome }),
  accept: (id: string, note?: string) => post(`/api/runs/${enc(id)}/accept`, note ? { note } : {}),
  reject: (id: string, note?: string) => post(`/api/runs/${enc(id)}/reject`, note ? { note } : {}),
};

/**
 * The URL of a live stream. EventSource sends no headers, so the token goes in the query, as
 * `access_token` (and `token`); `from` resumes after an event id (as Last-Event-ID would).
 */
export function eventsUrl(path: string, from?: string): string {
  const q = new URLSearchParams();
  const t = token();
  if (t) {
    q.set("access_token", t);
    q.set("token", t);
  }
  if (from) q.set("from", from);
  const query = q.toString();
  return query ? `${path}?${query}` : path;
}

/** The parsed data of an SSE event, or null when it is not JSON. */
export function eventData(event: MessageEvent): Record<string, unknown> | null {
  try {
    const data = JSON.parse(String(event.data)) as unknown;
    return data && typeof data === "object" ? (data as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The event types the dashboard listens to (named SSE events, or `message` with a `type`). The
 * all-runs stream sends `ready` first (`resumed: false` when it could not resume: reload); a run's
 * stream sends `end` when the run settles and then closes: the page closes its EventSource then.
 */
export const EVENT_TYPES = [
  "ready",
  "transition",
  "step",
  "model.text",
  "model.retry",
  "model.start",
  "model.end",
  "end",
] as const;

export type LiveStatus = "connecting" | "live" | "reconnecting" | "final";

/**
 * Subscribes to a live stream: `onEvent(type, data)` for each event; `onStatus` follows the
 * connection, and `onReopen` fires when it comes back after a break (refetch what may be missed).
 * EventSource reconnects by itself (sending Last-Event-ID); when it gives up (an HTTP error),
 * a new one is opened after a pause.
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
  if (typeof EventSource === "undefined") return () => {};
  let source: EventSource | null = null;
  let lastId = handlers.from ?? "";
  let readies = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let broken = false;
  let closed = false;
  let delay = 2000;
  const open = () => {
    const s = new EventSource(eventsUrl(path, lastId));
    source = s;
    handlers.onStatus?.(broken ? "reconnecting" : "connecting");
    s.onopen = () => {
      delay = 2000;
      handlers.onStatus?.("live");
      if (broken) handlers.onReopen?.();
      broken = false;
    };
    s.onerror = () => {
      broken = true;
      handlers.onStatus?.("reconnecting");
      if (s.readyState === EventSource.CLOSED && !closed) {
        retry = setTimeout(open, delay);
        delay = Math.min(delay * 2, 30_000);
      }
    };
    const named = (type: string) => (event: MessageEvent) => {
      if (event.lastEventId) lastId = event.lastEventId;
      const data = eventData(event);
      if (!data) return;
      if (type === "ready") {
        // The first is the greeting; a later one that could not resume means events were missed.
        if (readies++ > 0 && data.resumed === false) handlers.onReopen?.();
        return;
      }
      if (type === "end") {
        closed = true;
        s.close();
      }
      handlers.onEvent(type, data);
    };
    for (const type of EVENT_TYPES) s.addEventListener(type, named(type) as EventListener);
    s.onmessage = (event) => {
      if (event.lastEventId) lastId = event.lastEventId;
      const data = eventData(event);
      if (data && typeof data.type === "string") handlers.onEvent(data.type, data);
    };
  };
  open();
  return () => {
    closed = true;
    clearTimeout(retry);
    source?.close();
  };
}
