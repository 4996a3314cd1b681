import { appendFileSync } from "node:fs";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";

/** What the file exporter writes per span: one JSON line. */
export interface SpanLine {
  traceId: string;
  spanId: string;
  parentId: string | undefined;
  name: string;
  attributes: Record<string, unknown>;
  pid: number;
}

/** A span exporter that appends each span as a JSON line to a file (synchronously: a SIGKILL loses none). */
export class FileSpanExporter implements SpanExporter {
  constructor(readonly path: string) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter["export"]>[1]): void {
    const lines = spans.map((s) =>
      JSON.stringify({
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        parentId: s.parentSpanContext?.spanId,
        name: s.name,
        attributes: s.attributes,
        pid: process.pid,
      } satisfies SpanLine),
    );
    if (lines.length > 0) appendFileSync(this.path, `${lines.join("\n")}\n`);
    done({ code: 0 }); // ExportResultCode.SUCCESS
  }

  async shutdown(): Promise<void> {}
}
