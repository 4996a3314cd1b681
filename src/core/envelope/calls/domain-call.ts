import type { EnvelopeState } from "../envelope-state.ts";
import { governedCall } from "../governed-call.ts";
import { runStep } from "../journaled-step.ts";

/** `ctx.domain(domain, entity, params)`: a read from a domain provider as a `domain` step, governed. */
export function domainCall<R>(
  x: EnvelopeState,
  domain: string,
  entity: string,
  params: Record<string, unknown>,
): Promise<R> {
  const name = `${domain}.${entity}`;
  return governedCall(x, "domain", "domain", name, params, undefined, (begun) =>
    runStep<R>(
      x,
      "domain",
      name,
      params,
      {
        policy: x.host.domainRetry,
        startToCloseTimeoutMs: undefined,
        heartbeatTimeoutMs: undefined,
        run: ({ signal }) => x.host.readDomain(domain, entity, params, { runId: x.run.id, signal }) as Promise<R>,
        effect: undefined,
        rateLimit: x.host.rateLimits?.ofDomain(domain),
      },
      begun,
    ),
  );
}
