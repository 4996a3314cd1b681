/**
 * Refreshes the dashboard screenshots in docs/images/ that docs/guides/dashboard.md shows:
 * `cairn dev` with the expense and research examples and the dashboard fixture agent, runs made
 * through the API, and each page taken in Debian's chromium.
 *
 *   npm run build && node --import tsx scripts/screenshots.ts
 *
 * Needs chromium (`apt-get install chromium`, or CAIRN_CHROMIUM=<path>) and the built dashboard.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { browserSkipReason, type DevDashboard, ROOT, startDevDashboard } from "../test/helpers/dashboard-dev.ts";

const OUT = join(ROOT, "docs/images");

async function shot(page: Page, name: string, testid?: string): Promise<void> {
  const path = join(OUT, `${name}.png`);
  if (testid) await page.getByTestId(testid).first().screenshot({ path });
  else await page.screenshot({ path, fullPage: true });
  console.log(`wrote docs/images/${name}.png`);
}

async function newPage(dev: DevDashboard, hash: string): Promise<Page> {
  const context = await dev.browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  await page.goto(`${dev.url}/#${hash}`);
  return page;
}

/** The runs page with its search, and the start form built from a workflow's input schema. */
async function runsAndStart(dev: DevDashboard): Promise<void> {
  const page = await newPage(dev, "/runs");
  await page.getByTestId("start-agent").selectOption("shop");
  await page.getByTestId("start-workflow").selectOption("order");
  await page.getByTestId("start-field-customer").fill("ana");
  await page.getByTestId("start-field-sku").fill("tea-42");
  await page.getByTestId("start-field-quantity").fill("3");
  await shot(page, "dashboard-start-form", "start-run-form");
  await page.getByTestId("run-search-input").fill("order-2026-0042");
  await page.getByTestId("runs-table").waitFor();
  await shot(page, "dashboard-runs");
  await page.context().close();
}

/** An order's step timeline: a failed attempt, the retry backoff, the sleep. */
async function timeline(dev: DevDashboard): Promise<void> {
  const run = await dev.start(
    "shop",
    "order",
    { customer: "ana", sku: "tea", quantity: 2, express: true },
    "order-2026-0042",
  );
  await dev.untilState(run.id, "COMPLETED");
  const page = await newPage(dev, `/runs/${run.id}`);
  await page.getByTestId("gantt").waitFor();
  await shot(page, "dashboard-timeline", "gantt");
  await page.context().close();
}

/** An effect of unknown outcome, reconciled: the confirmation of what the workflow receives. */
async function reconcile(dev: DevDashboard): Promise<void> {
  const run = await dev.start("shop", "charge", { customer: "ana", amount: 42 });
  await dev.untilState(run.id, "NEEDS_RECONCILIATION");
  const [entry] = (await dev.get(`/api/runs/${run.id}/effects`)).effects as { effect: { id: string } }[];
  const id = entry?.effect.id ?? "";
  const page = await newPage(dev, `/runs/${run.id}`);
  await page.getByTestId(`reconcile-${id}`).click();
  await page.getByTestId(`reconcile-outcome-applied-${id}`).check();
  await page.getByTestId(`reconcile-result-${id}`).fill('{ "chargeId": "ch_42" }');
  await page.getByTestId(`reconcile-receipt-${id}`).fill('{ "networkRef": "NR-9" }');
  await shot(page, "dashboard-reconcile-form", "effects-table");
  await page.getByTestId(`reconcile-review-${id}`).click();
  await shot(page, "dashboard-reconcile-confirm", "effects-table");
  await page.context().close();
}

/** An approval the current identity may not decide, with the approvers named and "act as". */
async function approval(dev: DevDashboard): Promise<void> {
  const run = await dev.start("expenses", "submit", { employee: "ana", amount: 420, purpose: "client dinner" });
  const page = await newPage(dev, `/runs/${run.id}`);
  await page.getByTestId("answer-field-costCenter").fill("CC-1234");
  await page.getByTestId("answer-submit").click();
  await page.getByTestId("pending-approval").waitFor();
  await page.getByTestId("approve-button").click();
  await page.getByTestId("approval-error").waitFor();
  await shot(page, "dashboard-approval-refused", "pending-approval");
  await page.context().close();
}

/** A research run's model step as a conversation. */
async function conversation(dev: DevDashboard): Promise<void> {
  const run = await dev.start("researcher", "answer", { question: "How does a durable runtime avoid paying twice?" });
  await dev.untilState(run.id, "COMPLETED");
  const steps = (await dev.get(`/api/runs/${run.id}/steps`)).steps as { seq: number; kind: string }[];
  const last = steps.filter((s) => s.kind === "llm").at(-1);
  const page = await newPage(dev, `/runs/${run.id}`);
  await page.getByTestId(`step-row-${last?.seq}`).click();
  await shot(page, "dashboard-conversation", `conversation-${last?.seq}`);
  await page.context().close();
}

/** Two runs of one concurrency key with limit 1: one holds the slot, the other waits for it. */
async function slotWait(dev: DevDashboard): Promise<void> {
  const start = async (ms: number, priority?: number) => {
    const response = await fetch(`${dev.url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        agent: "shop",
        workflow: "hold",
        input: { ms },
        concurrencyKey: "customer:acme",
        concurrencyLimit: 1,
        ...(priority !== undefined && { priority }),
      }),
    });
    if (!response.ok) throw new Error(`POST /api/runs: ${await response.text()}`);
    return ((await response.json()) as { run: { id: string } }).run.id;
  };
  const held = await start(60_000);
  await dev.untilState(held, "RUNNING");
  const waiting = await start(10, 3);
  const page = await newPage(dev, "/runs?workflow=hold&state=PENDING,RUNNING");
  await page.getByTestId(`run-row-${waiting}`).getByTestId("run-slot-wait").waitFor();
  await page.getByTestId(`run-row-${held}`).waitFor();
  await shot(page, "dashboard-slot-wait", "runs-table");
  await page.context().close();
  await fetch(`${dev.url}/api/runs/${held}/cancel`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  await dev.untilState(waiting, "COMPLETED");
}

/** The schedules page: a nightly cron schedule in its zone just triggered, and a paused interval. */
async function schedules(dev: DevDashboard): Promise<void> {
  const define = async (id: string, definition: object) => {
    const response = await fetch(`${dev.url}/api/schedules/${id}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(definition),
    });
    if (!response.ok) throw new Error(`PUT /api/schedules/${id}: ${await response.text()}`);
  };
  const input = { customer: "ana", sku: "tea", quantity: 1, express: false };
  await define("nightly-orders", {
    agent: "shop",
    workflow: "order",
    input,
    cron: "0 2 * * *",
    timeZone: "Europe/Paris",
    overlap: "bufferOne",
    catchUp: "all",
    catchUpLimit: 5,
  });
  await define("restock-check", {
    agent: "shop",
    workflow: "order",
    input,
    every: "15m",
    catchUp: "none",
    paused: true,
  });
  const page = await newPage(dev, "/schedules");
  const card = page.getByTestId("schedule-nightly-orders");
  await card.getByTestId("schedule-trigger").click();
  await card.getByTestId("schedule-trigger-confirm").click();
  await card.getByTestId("schedule-triggered").locator("a").waitFor();
  // The page reloads the list every 5 s: the run's state as it ended.
  await card.getByTestId("schedule-last-run-state").filter({ hasText: "COMPLETED" }).waitFor({ timeout: 20_000 });
  await shot(page, "dashboard-schedules");
  await page.context().close();
}

const skip = browserSkipReason();
if (skip) {
  console.error(`cannot take the screenshots: ${skip}`);
  process.exit(1);
}
mkdirSync(OUT, { recursive: true });
const dev = await startDevDashboard();
try {
  await timeline(dev);
  await runsAndStart(dev);
  await reconcile(dev);
  await approval(dev);
  await conversation(dev);
  await slotWait(dev);
  await schedules(dev);
} finally {
  await dev.close();
}
