/**
 * What bench/postgres.ts needs from bench/peers/postgres-peers.ts. This file imports nothing, so
 * the root benchmark can import its types without bench/peers being installed.
 */

export interface DbosPeer {
  /** The SDK and its version. */
  label: string;
  /** The system database. */
  url: string;
  /** Per-step gaps (µs) of a workflow of `steps` steps, after a warm-up workflow of `warmUp`. */
  sequential(steps: number, warmUp: number): Promise<number[]>;
  /** `runs` workflows of `steps` steps started together; ms until every result is in. */
  concurrent(runs: number, steps: number): Promise<number>;
  /** Starts `count` workflows that wait in `DBOS.recv("go")`; their ids. */
  park(count: number): Promise<string[]>;
  /** Resolves once each of these parked workflows waits in `DBOS.recv`. */
  settled(ids: string[]): Promise<void>;
  /** Resolves with the time (shared clock) `DBOS.recv` returned in workflow `id`, once it has. */
  received(id: string): Promise<number>;
  shutdown(): Promise<void>;
}

export type GraphDurability = "sync" | "async";

export interface LangGraphPeer {
  /** LangGraph, PostgresSaver and their versions. */
  label: string;
  /** Per-step gaps (µs) of a graph run of `steps` super-steps, after a warm-up run of `warmUp`. */
  sequential(durability: GraphDurability, steps: number, warmUp: number): Promise<number[]>;
  /** `runs` graph runs of `steps` super-steps started together (distinct threads); ms until all return. */
  concurrent(durability: GraphDurability, runs: number, steps: number): Promise<number>;
  close(): Promise<void>;
}

/** A sender in another process than the workflows: stamps when `send` was called and returned. */
export interface DbosSender {
  send(id: string): Promise<{ calledAt: number; returnedAt: number }>;
  close(): Promise<void>;
}

/** The exports of postgres-peers.ts. */
export interface PostgresPeers {
  openDbos(url: string): Promise<DbosPeer>;
  dbosSender(url: string): Promise<DbosSender>;
  openLangGraph(url: string): Promise<LangGraphPeer>;
}
