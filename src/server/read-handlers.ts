import type { AgentInfo, EffectEntry, PrincipalInfo } from "../api/responses.ts";
import type { EffectRecord } from "../core/records.ts";
import { agentInfo } from "./agent-info.ts";
import {
  agentsRoute,
  contractRoute,
  effectsRoute,
  getRunRoute,
  listRunsRoute,
  meRoute,
  stepsRoute,
  transitionsRoute,
  waitsRoute,
} from "./routes.ts";
import { listRunPage } from "./run-list.ts";
import { type ServerApp, type ServerContext, wire } from "./server-context.ts";

/** The GET routes: who am I, agents, runs and what is recorded about each (see routes.ts). */
export function registerReadHandlers(app: ServerApp, ctx: ServerContext): void {
  const { runtime } = ctx;

  app.openapi(meRoute, (c) => {
    const { subject, roles, auth } = c.get("principal");
    const info: PrincipalInfo = { subject, roles: [...roles], auth, ...(ctx.switchable && { switchable: true }) };
    return c.json(info, 200);
  });

  let agents: AgentInfo[] | undefined;
  app.openapi(agentsRoute, (c) => {
    agents ??= ctx.agents.map(agentInfo);
    return c.json({ agents }, 200);
  });

  app.openapi(listRunsRoute, async (c) => {
    const page = await listRunPage(runtime, c.req.valid("query"), { scanLimit: ctx.listScanLimit });
    return c.json(wire(page, c.get("principal")), 200);
  });

  app.openapi(getRunRoute, async (c) =>
    c.json(wire({ run: await runtime.getRun(c.req.valid("param").id) }, c.get("principal")), 200),
  );

  app.openapi(transitionsRoute, async (c) => {
    const { id } = c.req.valid("param");
    await runtime.getRun(id);
    return c.json(wire({ transitions: await runtime.backend.listTransitions(id) }, c.get("principal")), 200);
  });

  app.openapi(stepsRoute, async (c) => {
    const { id } = c.req.valid("param");
    await runtime.getRun(id);
    return c.json(wire({ steps: await runtime.backend.loadSteps(id) }, c.get("principal")), 200);
  });

  app.openapi(effectsRoute, async (c) => {
    const { id } = c.req.valid("param");
    await runtime.getRun(id);
    const steps = await runtime.backend.loadSteps(id);
    const effects = steps
      .filter((s): s is typeof s & { effect: EffectRecord } => s.effect !== undefined)
      .map((s): EffectEntry => ({ seq: s.seq, name: s.name, effect: s.effect }));
    return c.json(wire({ effects }, c.get("principal")), 200);
  });

  app.openapi(waitsRoute, async (c) =>
    c.json(wire({ waits: await runtime.waits(c.req.valid("param").id) }, c.get("principal")), 200),
  );

  app.openapi(contractRoute, async (c) => {
    const contract = await runtime.exportRun(c.req.valid("param").id);
    return c.json(wire(contract, c.get("principal")), 200);
  });
}
