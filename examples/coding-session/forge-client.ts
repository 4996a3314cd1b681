import { request } from "node:http";
import type { PullRequest } from "./forge.ts";

/**
 * The request never reached the forge (nothing listened: ECONNREFUSED), so nothing was created.
 * Any other failure after the request left (a cut connection, a timeout) leaves it unknown.
 */
export class ForgeUnreachableError extends Error {
  override readonly name = "ForgeUnreachableError";
}

/** The forge refused the request (a 4xx): nothing was created, and asking again changes nothing. */
export class ForgeRefusedError extends Error {
  override readonly name = "ForgeRefusedError";
}

/** What the session asks the forge to open. */
export interface PullRequestDraft {
  head: string;
  base: string;
  title: string;
  body: string;
  /** The forge returns the pull request it made for this key rather than a second one. */
  key: string;
}

/** One JSON request to the forge, on a connection of its own (nothing keeps the process alive). */
function call(
  baseUrl: string,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<{ status: number; body: any }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, baseUrl),
      {
        method,
        agent: false,
        headers: payload === undefined ? {} : { "content-type": "application/json" },
        ...(signal ? { signal } : {}),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("error", reject);
        res.on("end", () => {
          if (!res.complete) return reject(new Error(`the forge's answer to ${method} ${path} was cut off`));
          try {
            resolve({ status: res.statusCode ?? 0, body: text === "" ? undefined : JSON.parse(text) });
          } catch {
            reject(new Error(`the forge answered ${method} ${path} with ${res.statusCode} and no JSON`));
          }
        });
      },
    );
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ECONNREFUSED") {
        reject(new ForgeUnreachableError(`the forge at ${baseUrl} refused the connection`, { cause: err }));
      } else {
        reject(err);
      }
    });
    req.end(payload);
  });
}

/** The pull requests whose head is `branch`, oldest first. */
export async function listPullRequests(forge: string, branch: string, signal?: AbortSignal): Promise<PullRequest[]> {
  const res = await call(forge, "GET", `/pulls?head=${encodeURIComponent(branch)}`, undefined, signal);
  if (res.status !== 200)
    throw new Error(`the forge answered the list of ${branch}'s pull requests with ${res.status}`);
  return res.body as PullRequest[];
}

/**
 * Opens a pull request. An open one for the head already there (422 `exists`) is returned as it
 * is: the session wants one pull request per branch, not an error.
 */
export async function createPullRequest(
  forge: string,
  draft: PullRequestDraft,
  signal?: AbortSignal,
): Promise<PullRequest> {
  const res = await call(forge, "POST", "/pulls", draft, signal);
  if (res.status === 200 || res.status === 201) return res.body as PullRequest;
  if (res.status === 422 && res.body?.error === "exists") return res.body.pull as PullRequest;
  const why = `(${res.status}): ${res.body?.message ?? "no reason given"}`;
  if (res.status >= 400 && res.status < 500) throw new ForgeRefusedError(`the forge refused the pull request ${why}`);
  throw new Error(`the forge failed to answer the pull request ${why}; whether it was opened is not known`);
}
