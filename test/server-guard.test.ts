import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { createServer, type ServerOptions } from "../src/server/app.ts";
import { type ListeningServer, serve } from "../src/server/serve.ts";
import { untilState } from "./helpers/runtime-helpers.ts";
import { desk, TOKEN_CONFIGS, TOKENS } from "./helpers/server-fixtures.ts";

/**
 * Browsers' cross-site requests and DNS rebinding (issue 21): a server refuses Host names it does
 * not answer to (without tokens: loopback on its own port), state changes and API requests from
 * pages of other origins, and sends its security headers on every response. Over a real socket,
 * since the Host check compares the port the request came in on.
 */

const opened: { listening: ListeningServer; runtime: Runtime; dir: string }[] = [];
afterEach(async () => {
  for (const { listening, runtime, dir } of opened.splice(0)) {
    await listening.close();
    await runtime.shutdown({ graceMs: 0 });
    rmSync(dir, { recursive: true, force: true });
  }
});

async function listen(options: ServerOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-guard-"));
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>dashboard</title>");
  const runtime = new Runtime({ agents: [desk], backend: new InMemoryBackend(), logger: silentLogger });
  const server = createServer(runtime, { logger: silentLogger, staticRoot: dir, ...options });
  const listening = await serve(server, { port: 0, print: () => {} });
  opened.push({ listening, runtime, dir });
  return { runtime, port: listening.port };
}

/** One request with exactly these headers (fetch would not let a test set Host). */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString();
        // An event stream does not end: its first bytes are enough.
        if (res.headers["content-type"]?.startsWith("text/event-stream")) res.destroy();
      });
      const done = () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {}
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      };
      res.on("end", done);
      res.on("close", done);
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

describe("a server without tokens", () => {
  it("answers only to loopback names on its own port", async () => {
    const { port } = await listen();
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
      expect((await send(port, "GET", "/api/runs", { host })).status, host).toBe(200);
    }
    // A DNS-rebinding page: its own name, resolved to 127.0.0.1.
    for (const host of [
      `evil.example:${port}`,
      "evil.example",
      `localhost:${port + 1}`,
      "localhost",
      `127.0.0.2:${port}`,
    ]) {
      const refused = await send(port, "GET", "/api/runs", { host });
      expect(refused.status, host).toBe(421);
      expect(refused.body.error.code).toBe("UNKNOWN_HOST");
    }
    const page = await send(port, "GET", "/", { host: `rebound.example:${port}` });
    expect(page.status).toBe(421);
    const approve = await send(
      port,
      "POST",
      "/api/runs",
      { host: `rebound.example:${port}`, "content-type": "application/json", origin: `http://rebound.example:${port}` },
      JSON.stringify({ agent: "desk", workflow: "quick", input: 1 }),
    );
    expect(approve.status).toBe(421);
  });

  it("refuses state changes from pages of other origins, and nothing changes", async () => {
    const { port, runtime } = await listen();
    const handle = await runtime.run("desk", "signal", null);
    await untilState(runtime.backend, handle.id, "PAUSED");
    const host = `127.0.0.1:${port}`;
    const cancel = (headers: Record<string, string>) =>
      send(port, "POST", `/api/runs/${handle.id}/cancel`, { host, ...headers });
    for (const headers of [
      { origin: "http://evil.example" },
      { origin: "null" },
      { origin: `http://localhost:${port}` },
      { origin: `http://127.0.0.1:${port + 1}` },
      { "sec-fetch-site": "cross-site", origin: "http://evil.example" },
      { "sec-fetch-site": "same-site", origin: `http://127.0.0.1:${port + 1}` },
      // A form or a no-cors fetch: what a browser sends with them.
      { "sec-fetch-site": "cross-site", "content-type": "text/plain" },
    ]) {
      const refused = await cancel(headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(refused.body.error.code).toBe("CROSS_ORIGIN");
    }
    expect((await runtime.getRun(handle.id)).state).toBe("PAUSED");
    const start = await send(
      port,
      "POST",
      "/api/runs",
      { host, "content-type": "application/json", origin: "http://evil.example" },
      JSON.stringify({ agent: "desk", workflow: "quick", input: 1 }),
    );
    expect(start.status).toBe(403);
    expect(await runtime.listRuns()).toHaveLength(1);
    // The server's own pages (and clients that are not browsers) may.
    expect((await cancel({ origin: `http://127.0.0.1:${port}`, "sec-fetch-site": "same-origin" })).status).toBe(200);
  });

  it("refuses API reads by pages of other sites, not a link to the dashboard", async () => {
    const { port } = await listen();
    const host = `127.0.0.1:${port}`;
    const read = await send(port, "GET", "/api/runs", { host, "sec-fetch-site": "cross-site" });
    expect(read.status).toBe(403);
    expect(read.body.error.code).toBe("CROSS_ORIGIN");
    expect((await send(port, "GET", "/api/runs", { host, origin: "http://evil.example" })).status).toBe(403);
    expect((await send(port, "GET", "/api/runs", { host, "sec-fetch-site": "none" })).status).toBe(200);
    expect((await send(port, "GET", "/", { host, "sec-fetch-site": "cross-site" })).status).toBe(200);
  });

  it("sends its security headers on every response", async () => {
    const { port } = await listen();
    const host = `127.0.0.1:${port}`;
    const responses = [
      await send(port, "GET", "/", { host }),
      await send(port, "GET", "/api/runs", { host }),
      await send(port, "GET", "/api/runs/nope", { host }),
      await send(port, "GET", "/api/events", { host }),
      await send(port, "GET", "/openapi.json", { host }),
      await send(port, "POST", "/api/runs", { host, "content-type": "text/plain" }, "x"),
      await send(port, "GET", "/api/runs", { host: "evil.example" }),
      await send(port, "GET", "/api/runs", { host, origin: "http://evil.example" }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 200, 404, 200, 200, 415, 421, 403]);
    for (const r of responses) {
      const csp = String(r.headers["content-security-policy"]);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(r.headers["x-frame-options"]).toBe("DENY");
      expect(r.headers["x-content-type-options"]).toBe("nosniff");
      expect(r.headers["referrer-policy"]).toBe("no-referrer");
      expect(r.headers["cross-origin-resource-policy"]).toBe("same-origin");
    }
  });
});

describe("a server with tokens", () => {
  it("answers to any name unless allowedHosts pins them, and still refuses other origins' pages", async () => {
    const { port } = await listen({ tokens: TOKEN_CONFIGS });
    const auth = { authorization: `Bearer ${TOKENS.viewer}` };
    expect((await send(port, "GET", "/api/runs", { host: "cairn.example.com", ...auth })).status).toBe(200);
    const cross = await send(port, "GET", "/api/runs", {
      host: "cairn.example.com",
      origin: "https://evil.example",
      ...auth,
    });
    expect(cross.status).toBe(403);
    // Behind a TLS proxy: the page's origin is https, the Host has no port.
    const own = await send(
      port,
      "POST",
      "/api/runs",
      {
        host: "cairn.example.com",
        origin: "https://cairn.example.com",
        "content-type": "application/json",
        authorization: `Bearer ${TOKENS.operator}`,
      },
      JSON.stringify({ agent: "desk", workflow: "quick", input: 1 }),
    );
    expect(own.status).toBe(201);

    const pinned = await listen({ tokens: TOKEN_CONFIGS, allowedHosts: ["cairn.example.com"] });
    expect((await send(pinned.port, "GET", "/api/runs", { host: "cairn.example.com", ...auth })).status).toBe(200);
    expect((await send(pinned.port, "GET", "/api/runs", { host: "other.example", ...auth })).status).toBe(421);
  });
});
