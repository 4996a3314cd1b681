import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createServer } from "../../server/app.ts";
import { loadTokens } from "../../server/auth.ts";
import { InsecureBindError, type ListeningServer, serve } from "../../server/serve.ts";
import { CliError, usageError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command, CommandArgs } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { TransitionPrinter } from "../follow.ts";
import type { Io } from "../format.ts";
import { type AgentModule, loadAgentModule, mergeAgentModules } from "../load-module.ts";

/**
 * `cairn serve` (the HTTP API and the dashboard, for production beside `cairn worker`) and
 * `cairn dev` (the same with an in-process worker, on SQLite, with the example agents loaded).
 */

/** The package's root: src/cli/commands/ from source, dist/cli/commands/ when built. */
const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
/** Where `npm run build` puts the dashboard. */
const DASHBOARD = join(PACKAGE_ROOT, "dist", "dashboard");
/** The example agents `cairn dev` loads when given no module (present in a checkout of the repository). */
const EXAMPLES = ["examples/report-builder.ts", "examples/expense-approval.ts", "examples/research-agent/research.ts"];

const SERVER_OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  tokens: { type: "string" },
} as const;

export const serveCommand: Command = {
  name: "serve",
  summary: "serve the HTTP API and the dashboard on a database (runs are driven by `cairn worker`)",
  usage:
    "cairn serve <module> [<module>…] [--database-url <url> [--schema <name>] | --db <path>] [--host <addr>] [--port <n>] [--tokens <file>] [--metrics-token-file <file>]",
  details: [
    "<module>   agent modules (as for `cairn worker`): their agents can be started from the API",
    "--host     address to listen on (default 127.0.0.1)",
    "--port     port (default 4000)",
    "--tokens   a JSON or YAML file of [{ token, subject, roles }] (roles: viewer, operator,",
    "           approver, admin); CAIRN_TOKENS=token:subject:role+role,… adds more",
    "--metrics-token-file <file>",
    "           a file holding the token a Prometheus scraper sends to GET /metrics (16 characters",
    "           or more; it opens nothing else), or CAIRN_METRICS_TOKEN=<token>; without either,",
    "           /metrics takes an admin token",
    "Without tokens every request acts as the local admin, so the server listens on loopback only;",
    "another --host without tokens is refused. This process drives no run: start `cairn worker`",
    "processes on the same database.",
  ],
  positionals: ["module"],
  variadic: true,
  options: { ...SERVER_OPTIONS, "metrics-token-file": { type: "string" }, ...DATABASE_OPTIONS },
  async run(args, io) {
    const modules = await loadModules(args.positionals);
    return start(args, io, modules, { worker: false, defaultPort: 4000 });
  },
};

export const devCommand: Command = {
  name: "dev",
  summary: "start the dashboard, the HTTP API and a worker in one process, with the example agents",
  usage: "cairn dev [<module>…] [--db <path>] [--port <n>] [--as <subject>]",
  details: [
    "<module>   agent modules to load (default: the examples of this repository:",
    `           ${EXAMPLES.join(", ")})`,
    "--port     port (default 4545); the dashboard is at its root",
    "--as       who you are on this machine (default: local): the actor of what you do in the",
    "           dashboard, and the approver of approvals (e.g. --as finance-lead); the",
    "           dashboard's identity switcher acts as anyone else, with any role",
    "Listens on 127.0.0.1 only, without authentication. Stop it with Ctrl-C: runs in flight are",
    "recorded INTERRUPTED and resume on the next start.",
  ],
  positionals: [],
  variadic: true,
  options: { ...SERVER_OPTIONS, as: { type: "string" }, ...DATABASE_OPTIONS },
  async run(args, io) {
    if (args.values.tokens !== undefined || args.values.host !== undefined) {
      throw usageError("cairn dev listens on 127.0.0.1 without tokens; use `cairn serve` for --host and --tokens");
    }
    const paths = args.positionals.length > 0 ? args.positionals : EXAMPLES.map((p) => join(PACKAGE_ROOT, p));
    const missing = paths.filter((p) => !existsSync(p));
    if (args.positionals.length === 0 && missing.length > 0) {
      throw usageError("cairn dev: name the agent modules to load, e.g. cairn dev src/agents.ts");
    }
    const modules = await loadModules(paths.map((p) => relative(process.cwd(), p) || p));
    return start(args, io, modules, { worker: true, defaultPort: 4545 });
  },
};

async function loadModules(paths: string[]): Promise<AgentModule[]> {
  const modules: AgentModule[] = [];
  for (const path of paths) {
    const module = await loadAgentModule(path);
    if (!modules.some((m) => m.file === module.file)) modules.push(module);
  }
  return modules;
}

async function start(
  { values }: CommandArgs,
  io: Io,
  modules: AgentModule[],
  mode: { worker: boolean; defaultPort: number },
): Promise<number> {
  const port = parsePort(values.port as string | undefined, mode.defaultPort);
  const host = (values.host as string | undefined) ?? "127.0.0.1";
  const tokens = loadTokens({ ...(values.tokens !== undefined && { file: values.tokens as string }) });
  const metricsToken = mode.worker ? undefined : loadMetricsToken(values["metrics-token-file"] as string | undefined);
  const database = chooseDatabase(values);
  const merged = mergeAgentModules(modules);
  const runtime = cliRuntime(merged, await database.open({ create: true }), mode.worker ? {} : "client");
  if (mode.worker) {
    const printer = new TransitionPrinter(io);
    printer.followAll();
    runtime.onTransition(printer.listener);
  }
  const dashboard = existsSync(join(DASHBOARD, "index.html")) ? DASHBOARD : undefined;
  // The module each agent came from, recorded on the runs the server starts for `cairn resume`.
  const agentModules = Object.fromEntries(
    modules.flatMap((module) => [...module.agents.keys()].map((name) => [name, module.file] as const)).reverse(),
  );
  const server = createServer(runtime, {
    tokens,
    agentModules,
    ...(dashboard !== undefined && { staticRoot: dashboard }),
    ...(values.as !== undefined && { localSubject: values.as as string }),
    ...(metricsToken !== undefined && { metricsToken }),
    // `cairn dev` (no tokens, loopback): the dashboard may act as any identity it names.
    switchIdentity: mode.worker && tokens.length === 0,
  });
  let listening: ListeningServer;
  try {
    await runtime.start({ handleSignals: true });
    listening = await serve(server, { host, port, print: (line) => io.err(line) });
  } catch (error) {
    await runtime.shutdown();
    if (error instanceof InsecureBindError) throw new CliError(error.message);
    throw error;
  }
  io.out(
    `cairn ${mode.worker ? "dev" : "serve"}  ${listening.url}/  agents ${[...merged.agents.keys()].join(", ")}  database ${database.label}${mode.worker ? "  worker in this process" : ""}`,
  );
  if (!dashboard) io.err("the dashboard is not built (run `npm run build`): the API alone is served");
  process.once("exit", () => void listening.close());
  // The runtime's signal handler shuts it down and exits; this keeps the process alive until then.
  setInterval(() => {}, 1 << 30);
  return new Promise<number>(() => {});
}

/**
 * The token of a Prometheus scraper for `GET /metrics` (`ServerOptions.metricsToken`): the content
 * of `file` (`--metrics-token-file`), else `CAIRN_METRICS_TOKEN`, as tokens are given to `serve`
 * (never on the command line, which every user of the machine can read); none when neither is set.
 */
export function loadMetricsToken(
  file: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  let token: string | undefined;
  let from = "CAIRN_METRICS_TOKEN";
  if (file !== undefined) {
    from = `the metrics token file ${file}`;
    try {
      token = readFileSync(file, "utf8").trim();
    } catch (error) {
      throw new CliError(`cannot read ${from}: ${(error as Error).message}`, { cause: error });
    }
  } else {
    token = env.CAIRN_METRICS_TOKEN?.trim();
    if (token === "") token = undefined;
  }
  if (token !== undefined && (token.length < 16 || /\s/.test(token))) {
    throw new CliError(`${from}: a metrics token is at least 16 characters, without spaces`);
  }
  return token;
}

function parsePort(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw usageError(`--port must be a port number (got "${text}")`);
  return n;
}
