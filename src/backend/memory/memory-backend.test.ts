import { runBackendConformance } from "../conformance/backend-conformance.ts";
import { InMemoryBackend } from "./memory-backend.ts";

runBackendConformance("memory", () => new InMemoryBackend(), { wakeUps: true, transitionFeed: true, schedules: true });
