import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CancelledError, McpError } from "../src/core/errors.ts";
import { McpClients } from "../src/mcp/mcp-clients.ts";

/**
 * McpClients against the real reference server, @modelcontextprotocol/server-everything, over
 * stdio (a child process per connection) and over streamable HTTP (a server started here).
 */

const ENTRY = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

interface LogLine {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

function recorder() {
  const lines: LogLine[] = [];
  return {
    lines,
    log: (level: string, message: string, fields: Record<string, unknown>) => lines.push({ level, message, fields }),
    /** The pids of the stdio servers connected so far, in order. */
    pids: () => lines.filter((l) => l.message.endsWith(" connected")).map((l) => l.fields.pid as number),
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

const never = new AbortController().signal;

describe("McpClients over stdio", () => {
  const logs = recorder();
  const mcp = new McpClients(
    { everything: { command: process.execPath, args: [ENTRY, "stdio"] } },
    { clientName: "cairn-test", log: logs.log },
  );
  afterAll(() => mcp.close());

  it("lists the server's tools with their JSON schemas, its stderr going to the log", async () => {
    expect(mcp.servers).toEqual(["everything"]);
    const tools = await mcp.list("everything");
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(["echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"]),
    );
    // simulate-research-query runs only as an MCP task (execution.taskSupport "required"): not offered.
    expect(names).not.toContain("simulate-research-query");
    expect(tools.find((t) => t.name === "echo")).toEqual({
      server: "everything",
      name: "echo",
      description: "Echoes back the input string",
      inputSchema: expect.objectContaining({
        type: "object",
        properties: { message: { type: "string", description: "Message to echo" } },
        required: ["message"],
      }),
    });
    expect(tools.find((t) => t.name === "get-sum")?.inputSchema).toMatchObject({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    });
    // The server's banner was piped into the log (debug), not printed.
    expect(logs.lines).toContainEqual({
      level: "debug",
      message: 'MCP server "everything" stderr: Starting default (STDIO) server...',
      fields: { server: "everything", stderr: "Starting default (STDIO) server..." },
    });
    expect(await mcp.list("everything")).toEqual(tools);
  });

  it("calls tools and joins their text", async () => {
    expect(await mcp.call("everything", "echo", { message: "hello there" }, never)).toEqual({
      text: "Echo: hello there",
      isError: false,
    });
    expect(await mcp.call("everything", "get-sum", { a: 2, b: 40 }, never)).toEqual({
      text: "The sum of 2 and 40 is 42.",
      isError: false,
    });
    const image = await mcp.call("everything", "get-tiny-image", {}, never);
    expect(image.text).toMatch(
      /^Here's the image you requested:\n\[image image\/png, \d+ bytes\]\nThe image above is the MCP logo\.$/,
    );
  });

  it("returns a tool's error as isError: arguments the tool refuses, a tool it does not have", async () => {
    // server-everything (the SDK's McpServer) validates arguments itself and answers with a tool
    // result flagged isError, not a JSON-RPC error: the model sees the message and can correct itself.
    expect(await mcp.call("everything", "get-sum", { a: "two" }, never)).toEqual({
      isError: true,
      text: expect.stringMatching(/^MCP error -32602: Input validation error: Invalid arguments for tool get-sum: /),
    });
    expect(await mcp.call("everything", "no-such-tool", {}, never)).toEqual({
      isError: true,
      text: "MCP error -32602: Tool no-such-tool not found",
    });
    expect(await mcp.call("everything", "simulate-research-query", { topic: "x" }, never)).toMatchObject({
      isError: true,
    });
  });

  it("refuses an unknown server, naming the known ones", async () => {
    const error = await rejection(mcp.call("everythin", "echo", { message: "x" }, never));
    expect(error).toMatchObject({
      code: "UNKNOWN_MCP_SERVER",
      message: expect.stringContaining('unknown MCP server "everythin" (known: everything)'),
    });
    expect(await rejection(mcp.list("nope"))).toMatchObject({ code: "UNKNOWN_MCP_SERVER" });
  });

  it("rejects with the signal's reason when a call is aborted, and keeps the connection", async () => {
    const controller = new AbortController();
    const reason = new CancelledError("run cancelled");
    setTimeout(() => controller.abort(reason), 150);
    const started = Date.now();
    // trigger-long-running-operation sleeps `duration` seconds in `steps` steps.
    const error = await rejection(
      mcp.call("everything", "trigger-long-running-operation", { duration: 10, steps: 10 }, controller.signal),
    );
    expect(error).toBe(reason);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(await rejection(mcp.call("everything", "echo", { message: "x" }, controller.signal))).toBe(reason);
    expect(logs.pids()).toHaveLength(1);
    expect((await mcp.call("everything", "echo", { message: "still here" }, never)).text).toBe("Echo: still here");
  });

  it("reconnects after the server process dies", async () => {
    const [pid] = logs.pids();
    process.kill(pid!, "SIGKILL");
    await until("the lost connection", () => logs.lines.some((l) => l.message.includes("closed the connection")));
    expect((await mcp.call("everything", "echo", { message: "back" }, never)).text).toBe("Echo: back");
    const pids = logs.pids();
    expect(pids).toHaveLength(2);
    expect(pids[1]).not.toBe(pid);
  });

  it("close() stops the server process and ends calls in flight; it is idempotent, later calls are refused", async () => {
    const pid = logs.pids().at(-1)!;
    expect(alive(pid)).toBe(true);
    const inFlight = rejection(
      mcp.call("everything", "trigger-long-running-operation", { duration: 10, steps: 10 }, never),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The server keeps running while its operation's timer is pending: the SDK ends it with SIGTERM after 2 s.
    await mcp.close();
    expect(alive(pid)).toBe(false);
    expect(await inFlight).toMatchObject({ code: "RUNTIME_CLOSED" });
    await mcp.close();
    expect(await rejection(mcp.call("everything", "echo", { message: "x" }, never))).toMatchObject({
      code: "RUNTIME_CLOSED",
    });
  });
});

describe("McpClients when a server cannot be used", () => {
  it("a command that does not exist: McpError naming the server and the command", async () => {
    const mcp = new McpClients({ files: { command: "npx-typo-cairn" } });
    const error = await rejection(mcp.call("files", "read", {}, never));
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: "MCP_FAILED", retryable: true });
    expect((error as Error).message).toBe(
      'MCP server "files" could not be started: spawn npx-typo-cairn ENOENT; check its command in new Runtime({ mcp: { files: ... } })',
    );
    // Not cached: the next use tries again.
    expect(await rejection(mcp.list("files"))).toBeInstanceOf(McpError);
    await mcp.close();
  });

  it("a server that exits at once: McpError with the end of its stderr", async () => {
    const mcp = new McpClients({
      broken: { command: process.execPath, args: ["-e", "console.error('missing API_KEY'); process.exit(3)"] },
    });
    const error = await rejection(mcp.list("broken"));
    expect(error).toBeInstanceOf(McpError);
    expect((error as Error).message).toMatch(
      /^MCP server "broken" could not be started: MCP error -32000: Connection closed; its stderr ended with: missing API_KEY; /,
    );
    await mcp.close();
  });

  it("a server that never answers the handshake: McpError after connectTimeoutMs, the process stopped", async () => {
    const logs = recorder();
    const mcp = new McpClients(
      { mute: { command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"] } },
      { connectTimeoutMs: 300, log: logs.log },
    );
    const error = await rejection(mcp.list("mute"));
    expect((error as Error).message).toContain('MCP server "mute" did not answer the MCP handshake within 300 ms');
    const pid = logs.lines.find((l) => l.message === 'MCP server "mute" started')?.fields.pid as number;
    // It ignores the end of its stdin: the SDK stops it with SIGTERM after 2 s, and close() waits for that.
    await mcp.close();
    expect(alive(pid)).toBe(false);
    expect(logs.lines.map((l) => l.message)).toContain('MCP server "mute" disconnected');
  });

  it("an HTTP endpoint nobody listens on: McpError naming the url", async () => {
    const url = `http://127.0.0.1:${await freePort()}/mcp`;
    const mcp = new McpClients({ web: { url } });
    const error = await rejection(mcp.call("web", "echo", { message: "x" }, never));
    expect(error).toBeInstanceOf(McpError);
    expect((error as Error).message).toContain(`MCP server "web" could not be reached at ${url}: fetch failed`);
    await mcp.close();
  });
});

describe("McpClients over streamable HTTP", () => {
  let port = 0;
  let server: ChildProcess | undefined;
  let serverOutput = "";

  /** server-everything's HTTP mode: `index.js streamableHttp`, port from PORT (default 3001), path /mcp. */
  async function startServer(): Promise<void> {
    const child = spawn(process.execPath, [ENTRY, "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server = child;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      serverOutput += chunk;
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    await until("the HTTP server", () => stderr.includes(`listening on port ${port}`), 10_000);
  }

  async function stopServer(): Promise<void> {
    const child = server;
    if (child === undefined || child.exitCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  beforeAll(async () => {
    port = await freePort();
    await startServer();
  });
  afterAll(stopServer);

  it("lists and calls tools, reconnects when the server restarts, and ends its session on close", async () => {
    const logs = recorder();
    const mcp = new McpClients({ web: { url: `http://127.0.0.1:${port}/mcp` } }, { log: logs.log });
    try {
      const names = (await mcp.list("web")).map((t) => t.name);
      expect(names).toContain("echo");
      expect(await mcp.call("web", "echo", { message: "over http" }, never)).toEqual({
        text: "Echo: over http",
        isError: false,
      });

      // A restarted server does not know the session: that call fails (retryable) and drops the
      // connection; the next one opens a new session.
      await stopServer();
      await startServer();
      const error = await rejection(mcp.call("web", "echo", { message: "x" }, never));
      expect(error).toBeInstanceOf(McpError);
      expect((error as Error).message).toMatch(
        /^MCP server "web" failed calling tool "echo": .*the next call reconnects$/,
      );
      expect((await mcp.call("web", "echo", { message: "again" }, never)).text).toBe("Echo: again");
    } finally {
      await mcp.close();
    }
    expect(serverOutput).toContain("Received session termination request for session");
  });
});
