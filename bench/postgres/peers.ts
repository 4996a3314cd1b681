import type { PostgresPeers } from "../peers/postgres-peer-types.ts";

/** Imported by a computed path, so that the type-check of cairn does not need bench/peers. */
const PEERS_MODULE = "../peers/postgres-peers.ts";

/** bench/peers/postgres-peers.ts (DBOS and LangGraph); rejects when bench/peers is not installed. */
export async function loadPeers(): Promise<PostgresPeers> {
  return (await import(PEERS_MODULE)) as PostgresPeers;
}

/** The peers, loaded, and the databases made for them. */
export interface PeerUrls {
  load: PostgresPeers;
  dbosUrl: string;
  graphUrl: string;
}
