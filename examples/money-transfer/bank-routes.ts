import type { IncomingMessage, ServerResponse } from "node:http";
import { BadRequest, type BankStore, type Faults, OPERATIONS, type Operation } from "./bank-store.ts";

/** What the bank's request handler works on: its store and the state one server keeps in memory. */
export interface BankState {
  readonly store: BankStore;
  readonly naive: boolean;
  faults: Faults;
  /** Requests received per idempotency key. */
  readonly requests: Map<string, number>;
}

/** Takes one fault for an operation of `kind`, if one is armed. */
function takeFault(state: BankState, kind: Operation): "before" | "after" | undefined {
  const faults = state.faults;
  if (faults.op !== undefined && faults.op !== kind) return undefined;
  if ((faults.failBeforeApply ?? 0) > 0) {
    faults.failBeforeApply = (faults.failBeforeApply ?? 0) - 1;
    return "before";
  }
  if ((faults.failAfterApply ?? 0) > 0) {
    faults.failAfterApply = (faults.failAfterApply ?? 0) - 1;
    return "after";
  }
  return undefined;
}

function sender(res: ServerResponse) {
  return (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
}

/** POST /withdraw, /deposit, /refund: applied at most once per key (unless naive). */
async function operation(state: BankState, op: Operation, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const send = sender(res);
  const body = await readJson(req);
  const request = { account: body.account, amount: body.amount, key: body.key };
  if (typeof request.account !== "string" || typeof request.key !== "string" || request.key === "") {
    return send(400, { error: "bad_request", message: "account and key must be strings" });
  }
  if (!Number.isInteger(request.amount) || request.amount <= 0) {
    return send(400, { error: "bad_request", message: "amount must be an integer > 0 (cents)" });
  }
  state.requests.set(request.key, (state.requests.get(request.key) ?? 0) + 1);
  const fault = takeFault(state, op);
  if (fault === "before") return void req.socket.destroy();
  const answer = state.store.apply(op, request, state.naive);
  if (fault === "after") return void req.socket.destroy();
  send(answer.status, answer.body);
}

/** Serves one request of the bank's HTTP API (see bank.ts for the endpoints). */
export async function handleBankRequest(state: BankState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { store, naive } = state;
  const url = new URL(req.url ?? "/", "http://bank");
  const path = url.pathname;
  const send = sender(res);
  const op = path.slice(1) as Operation;
  if (req.method === "POST" && OPERATIONS.includes(op)) return operation(state, op, req, res);
  if (req.method === "GET" && path === "/status") {
    if (naive) return send(404, { error: "not_found", message: "this bank has no status endpoint" });
    const key = url.searchParams.get("key");
    if (!key) return send(400, { error: "bad_request", message: "GET /status?key=<idempotency key>" });
    return send(200, store.status(key));
  }
  if (req.method === "GET" && path === "/ledger") {
    return send(200, store.ledger(url.searchParams.get("key") ?? undefined));
  }
  if (req.method === "GET" && path === "/accounts") return send(200, store.accounts());
  if (req.method === "POST" && path === "/accounts") {
    const body = await readJson(req);
    if (typeof body.id !== "string") return send(400, { error: "bad_request", message: "id must be a string" });
    return send(200, store.putAccount({ id: body.id, balance: body.balance, closed: body.closed === true }));
  }
  const account = /^\/accounts\/([^/]+)(\/close)?$/.exec(path);
  if (account?.[1]) {
    const id = decodeURIComponent(account[1]);
    const found =
      req.method === "POST" && account[2] ? store.closeAccount(id) : req.method === "GET" ? store.account(id) : null;
    if (found === null) return send(405, { error: "method_not_allowed" });
    return found ? send(200, found) : send(404, { error: "unknown_account", message: `no account ${id}` });
  }
  if (req.method === "POST" && path === "/faults") {
    state.faults = { ...(await readJson(req)) };
    return send(200, state.faults);
  }
  send(404, { error: "not_found", message: `${req.method} ${path}` });
}

async function readJson(req: IncomingMessage): Promise<Record<string, any>> {
  let text = "";
  for await (const chunk of req) text += chunk;
  if (text === "") return {};
  try {
    const value = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
  } catch {}
  throw new BadRequest("the body must be a JSON object");
}
