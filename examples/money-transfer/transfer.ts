/**
 * Moving money between two accounts of a bank that lives in another database (./bank.ts): the
 * withdrawal and the deposit are effect tools (DESIGN §5). Each gets an intent committed before
 * it runs and an idempotency key the bank de-duplicates on (`money_transfer/withdraw:<transferId>`),
 * the same on every attempt and after every crash; when an attempt ends without an answer (the
 * process died, the connection dropped), the bank's `/status` says whether the money moved, so
 * a resumed run neither loses a withdrawal nor makes it twice. If the deposit is refused (a closed
 * account) the run fails and compensates: the withdrawal is refunded and the run ends COMPENSATED.
 *
 *   node bin/cairn.js run examples/money-transfer/transfer.ts money_transfer transfer \
 *     --input '{"transferId":"t-1001","from":"alice","to":"bob","amount":2500}'
 *
 * The tools call the bank at BANK_URL; without it, this process starts one of its own on
 * `.cairn/bank.db` (BANK_DB), with the accounts alice, bob and carol (closed). Look at it with
 *
 *   node --import tsx examples/money-transfer/bank.ts --db .cairn/bank.db --show
 *
 * `money_transfer_naive` is the same workflow against a naive bank (NAIVE_BANK_URL, else one on
 * `.cairn/bank-naive.db`): no idempotency, no status. A crash between its intent and its answer
 * leaves the run NEEDS_RECONCILIATION until an operator says what happened (`cairn reconcile`).
 *
 * `MONEY_DEMO_DELAY_MS` makes withdraw and deposit wait that long after the bank answered, so a
 * `kill -9` can land after the money moved and before Cairn recorded it (see
 * docs/guides/effects-and-money.md).
 *
 * In a project of your own, import from "cairn" instead of "../../src/index.ts".
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import {
  defineAgent,
  defineConfig,
  defineTool,
  EffectNotAppliedError,
  EffectRefusedError,
  type EffectStatusAnswer,
  type RetryPolicy,
} from "../../src/index.ts";
import { type Applied, type Bank, DEMO_ACCOUNTS, type Operation, startBank } from "./bank.ts";
import { BankUnreachableError, callBank } from "./bank-client.ts";

/** One leg of a transfer: what withdraw, deposit and refund take. */
const Leg = z.object({
  transferId: z.string().min(1),
  account: z.string().min(1),
  amount: z.number().int().positive(),
});
export type Leg = z.infer<typeof Leg>;

/** What the `transfer` workflow takes. */
export interface TransferInput {
  transferId: string;
  from: string;
  to: string;
  /** Cents. */
  amount: number;
}

/** What a completed transfer returns: the bank's answers to the withdrawal and the deposit. */
export interface TransferOutput extends TransferInput {
  withdrawal: Applied;
  deposit: Applied;
}

export interface MoneyTransferOptions {
  /** @default "money_transfer" (or "money_transfer_naive") */
  name?: string;
  /** The bank's URL, or a function that finds it when a tool first needs it. */
  bank: string | (() => string | Promise<string>);
  /**
   * Against a naive bank: the tools declare neither `status` nor `idempotent`, so an attempt of
   * unknown outcome sends the run to NEEDS_RECONCILIATION.
   */
  naive?: boolean;
  /** The tools' retry policy. @default Cairn's (1 s, ×2, 5 attempts) */
  retry?: RetryPolicy;
}

/** How the tools reach the bank. */
interface BankAccess {
  url: () => Promise<string>;
  naive: boolean;
  retry: RetryPolicy | undefined;
}

/** Asks the bank whether the operation with this key was applied. */
async function bankStatus(
  bank: BankAccess,
  ctx: { idempotencyKey: string; signal: AbortSignal },
): Promise<EffectStatusAnswer<Applied>> {
  let res: Awaited<ReturnType<typeof callBank>>;
  try {
    res = await callBank(
      await bank.url(),
      "GET",
      `/status?key=${encodeURIComponent(ctx.idempotencyKey)}`,
      undefined,
      ctx.signal,
    );
  } catch (err) {
    return { outcome: "unknown", note: `the bank's /status could not be asked: ${(err as Error).message}` };
  }
  if (res.status !== 200) return { outcome: "unknown", note: `the bank answered /status with ${res.status}` };
  if (res.body.applied) {
    const result = res.body.result as Applied;
    return { outcome: "applied", result, receipt: receipt(result) };
  }
  return { outcome: "not_applied" };
}

/** Calls the bank for `op`; what its answer says about the effect, as the effect tool's outcome. */
async function callOperation(
  bank: BankAccess,
  op: Operation,
  args: Leg,
  ctx: { idempotencyKey: string; signal: AbortSignal },
): Promise<Applied> {
  const body = { account: args.account, amount: args.amount, key: ctx.idempotencyKey };
  let res: Awaited<ReturnType<typeof callBank>>;
  try {
    res = await callBank(await bank.url(), "POST", `/${op}`, body, ctx.signal);
  } catch (err) {
    // Nothing listened: the request never left, the money surely did not move; retried
    // with the same key. Any other failure (a dropped connection, a timeout) may have
    // come after the bank applied it: the error stays unclassified and `status` settles it.
    if (err instanceof BankUnreachableError) throw new EffectNotAppliedError(err.message, { cause: err });
    throw err;
  }
  if (res.status === 200) {
    await demoDelay(ctx.signal);
    return res.body as Applied;
  }
  const reason = `${res.body?.error ?? res.status}: ${res.body?.message ?? "no reason given"}`;
  // 409 (insufficient funds, closed account) and the other 4xx: the bank refused and will
  // refuse again; nothing moved.
  if (res.status >= 400 && res.status < 500) {
    throw new EffectRefusedError(`the bank refused to ${op} ${args.amount} on ${args.account}: ${reason}`);
  }
  throw new Error(`the bank answered ${op} with ${res.status} (${reason}); whether it applied is not known`);
}

/** One of the three effect tools that move money. */
function operationTool(bank: BankAccess, op: Operation, description: string, compensate?: string) {
  return defineTool({
    description,
    input: Leg,
    ...(bank.retry ? { retry: bank.retry } : {}),
    effect: {
      // One transfer, one withdrawal: the key is the transfer's, whichever run or attempt makes it.
      key: (args: Leg) => args.transferId,
      ...(bank.naive ? {} : { status: (ctx, _args: Leg) => bankStatus(bank, ctx) }),
      ...(compensate ? { compensate } : {}),
      receipt,
    },
    run: (ctx, args): Promise<Applied> => callOperation(bank, op, args, ctx),
  });
}

/** The money-transfer agent against a given bank (tests make one per bank). */
export function moneyTransferAgent(options: MoneyTransferOptions) {
  const naive = options.naive ?? false;
  const bank: BankAccess = {
    url: async () => (typeof options.bank === "string" ? options.bank : await options.bank()),
    naive,
    retry: options.retry,
  };
  return defineAgent({
    name: options.name ?? (naive ? "money_transfer_naive" : "money_transfer"),
    description: naive
      ? "Moves money between two accounts of a bank with neither idempotency keys nor a status query"
      : "Moves money between two accounts, exactly once, refunding the withdrawal if the deposit is refused",
    // When the workflow fails (a refused deposit), the applied effects' compensations run in reverse.
    compensate: "on_failure",
    tools: {
      withdraw: operationTool(bank, "withdraw", "Takes the amount from the source account", "refund"),
      deposit: operationTool(bank, "deposit", "Puts the amount on the destination account"),
      refund: operationTool(bank, "refund", "Gives a withdrawn amount back (the withdrawal's compensation)"),
    },
    workflows: {
      async transfer(ctx, input: TransferInput): Promise<TransferOutput> {
        const { transferId, from, to, amount } = input;
        const withdrawal = await ctx.tool("withdraw", { transferId, account: from, amount });
        const deposit = await ctx.tool("deposit", { transferId, account: to, amount });
        return { transferId, from, to, amount, withdrawal, deposit };
      },
    },
  });
}

/** What Cairn records as the proof that the money moved. */
function receipt(result: Applied): { bankTx: string; balance: number } {
  return { bankTx: result.id, balance: result.balance };
}

const localBanks = new Map<string, Promise<Bank>>();

/**
 * The bank at `BANK_URL` (`NAIVE_BANK_URL`), else one started in this process on `BANK_DB`
 * (default `.cairn/bank.db`; the naive one on `.cairn/bank-naive.db`), seeded with the demo
 * accounts on first use. It does not keep the process alive: `cairn run` ends with its run.
 */
export async function localBankUrl(naive: boolean): Promise<string> {
  const fromEnv = naive ? process.env.NAIVE_BANK_URL : process.env.BANK_URL;
  if (fromEnv) return fromEnv;
  const db = naive ? (process.env.NAIVE_BANK_DB ?? ".cairn/bank-naive.db") : (process.env.BANK_DB ?? ".cairn/bank.db");
  let bank = localBanks.get(db);
  if (!bank) {
    bank = startBank({ db, naive, seed: DEMO_ACCOUNTS }).then((started) => {
      started.server.unref();
      process.stderr.write(`${naive ? "naive bank" : "bank"}: started in this process at ${started.url} (db ${db})\n`);
      return started;
    });
    localBanks.set(db, bank);
  }
  return (await bank).url;
}

export const moneyTransfer = moneyTransferAgent({ bank: () => localBankUrl(false) });
export const moneyTransferNaive = moneyTransferAgent({ naive: true, bank: () => localBankUrl(true) });

/** What the CLI runs the agents with: they call nothing but the bank. */
export const runtimeOptions = defineConfig({});

async function demoDelay(signal: AbortSignal): Promise<void> {
  const ms = Number(process.env.MONEY_DEMO_DELAY_MS ?? 0);
  if (ms > 0) await sleep(ms, undefined, { signal });
}
