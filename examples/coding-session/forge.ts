/**
 * A small forge for the coding-session example: pull requests against one local bare git
 * repository (the session's "remote"), served over HTTP on loopback with Hono. It plays GitHub's
 * part in the tenth step of the session: the place where opening a pull request is an effect
 * outside the sandbox, which a retry after a lost answer must not repeat.
 *
 *   node --import tsx examples/coding-session/forge.ts --repo .cairn/coding-session/remote.git [--port 4200]
 *
 * Endpoints (JSON in and out):
 *
 *   POST /pulls {head, base?, title, body?, key?}  201 the new pull request; 200 the same one again
 *                                                 for a key it has seen; 422 when the head branch is
 *                                                 not in the repository or already has an open one
 *   GET  /pulls[?head=<branch>]                   the pull requests (of that head branch), oldest first
 *   GET  /pulls/<number>                          one pull request
 *   POST /faults {dropCreateResponses}            the next N creates are applied, then their
 *                                                 connection is cut without an answer (a lost response)
 *
 * Pull requests are kept in a JSON file beside nothing else (`file`), or in memory.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { type ServerType, serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { branchSha } from "./git-remote.ts";

/** A pull request of the forge. */
export interface PullRequest {
  number: number;
  head: string;
  base: string;
  title: string;
  body: string;
  /** The head branch's commit when the pull request was opened. */
  headSha: string;
  state: "open";
  url: string;
  createdAt: number;
  /** The idempotency key it was created with, if any. */
  key: string | null;
}

export interface ForgeOptions {
  /** The bare repository the pull requests are against. */
  repo: string;
  /** A JSON file that keeps the pull requests across restarts. @default in memory */
  file?: string;
  /** @default 0 (any free port) */
  port?: number;
  /** @default "127.0.0.1" */
  host?: string;
}

/** A forge serving on loopback. */
export interface Forge {
  readonly url: string;
  /** Every pull request, oldest first. */
  pulls(): PullRequest[];
  /** Create requests received (applied, repeated, refused or dropped), since it started. */
  readonly createRequests: number;
  /** The next `n` creates are applied and then answered with a cut connection. */
  dropCreateResponses(n: number): void;
  /** Lets the process end while the forge listens (a CLI run that started one of its own). */
  unref(): void;
  close(): Promise<void>;
}

interface ForgeState {
  repo: string;
  file: string | undefined;
  pulls: PullRequest[];
  dropCreates: number;
  createRequests: number;
  url: string;
}

function load(file: string | undefined): PullRequest[] {
  if (file === undefined || !existsSync(file)) return [];
  return JSON.parse(readFileSync(file, "utf8")) as PullRequest[];
}

function save(state: ForgeState): void {
  if (state.file === undefined) return;
  writeFileSync(`${state.file}.tmp`, JSON.stringify(state.pulls, null, 2));
  renameSync(`${state.file}.tmp`, state.file);
}

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);

/** POST /pulls: applies at most one pull request per key, and one open pull request per head. */
async function createPull(state: ForgeState, c: Context): Promise<Response> {
  state.createRequests++;
  const body = (await c.req.json().catch(() => ({}))) as Record<string, unknown>;
  const head = str(body.head);
  const title = str(body.title);
  if (!head || !title)
    return c.json({ error: "bad_request", message: "head and title must be non-empty strings" }, 400);
  const key = str(body.key) ?? null;
  const repeat = key === null ? undefined : state.pulls.find((p) => p.key === key);
  if (repeat) return c.json(repeat, 200);
  const open = state.pulls.find((p) => p.head === head && p.state === "open");
  if (open) {
    return c.json(
      { error: "exists", message: `branch ${head} has an open pull request #${open.number}`, pull: open },
      422,
    );
  }
  const headSha = await branchSha(state.repo, head);
  if (headSha === undefined) {
    return c.json({ error: "unknown_branch", message: `the repository has no branch ${head}: push it first` }, 422);
  }
  const number = state.pulls.length + 1;
  const pull: PullRequest = {
    number,
    head,
    base: str(body.base) ?? "main",
    title,
    body: typeof body.body === "string" ? body.body : "",
    headSha,
    state: "open",
    url: `${state.url}/pulls/${number}`,
    createdAt: Date.now(),
    key,
  };
  state.pulls.push(pull);
  save(state);
  if (state.dropCreates > 0) {
    state.dropCreates--;
    // Applied, and the answer is lost: the caller sees a cut connection.
    (c.env as { incoming: IncomingMessage }).incoming.socket.destroy();
  }
  return c.json(pull, 201);
}

function forgeApp(state: ForgeState): Hono {
  const app = new Hono();
  app.post("/pulls", (c) => createPull(state, c));
  app.get("/pulls", (c) => {
    const head = c.req.query("head");
    return c.json(head === undefined ? state.pulls : state.pulls.filter((p) => p.head === head));
  });
  app.get("/pulls/:number", (c) => {
    const pull = state.pulls.find((p) => String(p.number) === c.req.param("number"));
    return pull
      ? c.json(pull)
      : c.json({ error: "not_found", message: `no pull request ${c.req.param("number")}` }, 404);
  });
  app.post("/faults", async (c) => {
    const body = (await c.req.json().catch(() => ({}))) as { dropCreateResponses?: unknown };
    state.dropCreates = Number(body.dropCreateResponses ?? 0);
    return c.json({ dropCreateResponses: state.dropCreates });
  });
  return app;
}

/** Starts a forge on loopback; `forge.url` is where it listens. */
export async function startForge(options: ForgeOptions): Promise<Forge> {
  const file = options.file === undefined ? undefined : resolve(options.file);
  const state: ForgeState = {
    repo: resolve(options.repo),
    file,
    pulls: load(file),
    dropCreates: 0,
    createRequests: 0,
    url: "",
  };
  const app = forgeApp(state);
  const server = await new Promise<ServerType>((ok, fail) => {
    const listening = serve({ fetch: app.fetch, port: options.port ?? 0, hostname: options.host ?? "127.0.0.1" }, () =>
      ok(listening),
    );
    listening.once("error", fail);
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the forge is not listening on a port");
  state.url = `http://${address.address}:${address.port}`;
  let closed: Promise<void> | undefined;
  return {
    url: state.url,
    pulls: () => state.pulls.map((p) => ({ ...p })),
    get createRequests() {
      return state.createRequests;
    },
    dropCreateResponses(n) {
      state.dropCreates = n;
    },
    unref() {
      server.unref();
    },
    close() {
      closed ??= new Promise<void>((ok) => {
        server.close(() => ok());
        if ("closeAllConnections" in server) server.closeAllConnections();
      });
      return closed;
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values } = parseArgs({
    options: {
      repo: { type: "string", default: ".cairn/coding-session/remote.git" },
      file: { type: "string", default: ".cairn/coding-session/pulls.json" },
      port: { type: "string", default: "0" },
    },
  });
  const forge = await startForge({ repo: values.repo, file: values.file, port: Number(values.port) });
  console.log(`forge listening on ${forge.url} (repository ${values.repo})`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void forge.close().then(() => process.exit(0)));
  }
}
