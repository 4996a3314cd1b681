import http from "node:http";
import type { Transition } from "./options.ts";

/** Requests: node:http on a keep-alive agent. */

/** The keep-alive agent of every request (closed at the end). */
export const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

export function request(
  base: string,
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      {
        method,
        agent,
        headers:
          body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export async function transitionsOf(base: string, runId: string): Promise<Transition[]> {
  const res = await request(base, "GET", `/api/runs/${runId}/transitions`);
  if (res.status !== 200) throw new Error(`GET /api/runs/${runId}/transitions: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { transitions: Transition[] }).transitions;
}

/** Calls `work` on every item, `concurrency` at a time. */
export async function eachLimited<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}
