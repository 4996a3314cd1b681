import type { FeedReadyData } from "../api/stream-events.ts";
import { seesStacks, withoutStacks } from "./error-stacks.ts";
import { allEventsRoute, runEventsRoute } from "./routes.ts";
import { type FeedEntry, RunFeed } from "./run-feed.ts";
import { parseRunEventId, produceRunEvents } from "./run-stream.ts";
import type { ServerApp, ServerContext } from "./server-context.ts";
import { encodeEvent, sseResponse, Wakeup } from "./sse.ts";

/**
 * The two event streams (Server-Sent Events). `GET /api/runs/:id/events`: see run-stream.ts.
 * `GET /api/events`: every run's transitions from the {@link RunFeed}; the first event is `ready`
 * (`{ resumed }`), then `transition` events, whose ids are the backend feed's cursors (or
 * `<boot>.<seq>` on a backend without a feed). A Last-Event-ID (or `?from=`) the feed can resume
 * — with a backend feed, one of the same store given out by this server or another, up to
 * `capacity` transitions behind; otherwise one of this server process that is still kept —
 * resumes exactly after it; any other gets `ready { resumed: false }` — reload what you show —
 * and the stream goes on from now.
 */
export function registerEventHandlers(app: ServerApp, ctx: ServerContext): void {
  const onError = (error: unknown) => ctx.logger.warn({ error: String(error) }, "an event stream failed");

  app.openapi(runEventsRoute, async (c) => {
    const { id } = c.req.valid("param");
    // Unknown run: a JSON 404, before any stream opens.
    const run = await ctx.runtime.getRun(id);
    const cursor = parseRunEventId(c.req.header("last-event-id") ?? c.req.valid("query").from, ctx.boot);
    const stacks = seesStacks(c.get("principal"));
    return sseResponse(
      (send, signal) =>
        produceRunEvents(
          { runtime: ctx.runtime, boot: ctx.boot, pollIntervalMs: ctx.pollIntervalMs },
          run,
          cursor,
          // Step snapshots carry their errors: their stacks go to admins only.
          stacks
            ? send
            : (event) => send(event instanceof Uint8Array ? event : { ...event, data: withoutStacks(event.data) }),
          signal,
        ),
      { heartbeatMs: ctx.heartbeatMs, signal: c.req.raw.signal, onError },
    );
  });

  // Each transition of the feed is formatted once, for every client of GET /api/events.
  const encoded = new WeakMap<FeedEntry, Uint8Array>();
  const wireOf = (entry: FeedEntry): Uint8Array => {
    let bytes = encoded.get(entry);
    if (bytes === undefined) {
      bytes = encodeEvent({ id: RunFeed.idOf(entry, ctx.boot), event: "transition", data: entry.data });
      encoded.set(entry, bytes);
    }
    return bytes;
  };

  app.openapi(allEventsRoute, async (c) => {
    const lastId = c.req.header("last-event-id") ?? c.req.valid("query").from;
    const wakeup = new Wakeup();
    const unsubscribe = await ctx.feed.subscribe(() => wakeup.wake());
    return sseResponse(
      async (send, signal) => {
        try {
          const resumed = await ctx.feed.resume(lastId, ctx.boot);
          let seq = resumed?.seq ?? ctx.feed.lastSeq;
          const readyId = resumed && lastId !== undefined ? lastId.trim() : ctx.feed.idAt(seq, ctx.boot);
          send({ id: readyId, event: "ready", data: { resumed: resumed !== undefined } satisfies FeedReadyData });
          for (const entry of resumed?.backlog ?? []) send(wireOf(entry));
          while (!signal.aborted) {
            const entries = ctx.feed.entriesAfter(seq);
            if (entries === undefined) {
              // This client fell further behind than the feed keeps.
              seq = ctx.feed.lastSeq;
              send({
                id: ctx.feed.idAt(seq, ctx.boot),
                event: "ready",
                data: { resumed: false } satisfies FeedReadyData,
              });
              continue;
            }
            for (const entry of entries) {
              seq = entry.seq;
              send(wireOf(entry));
            }
            await wakeup.sleep(ctx.heartbeatMs, signal);
          }
        } finally {
          unsubscribe();
        }
      },
      { heartbeatMs: ctx.heartbeatMs, signal: c.req.raw.signal, onError },
    );
  });
}
