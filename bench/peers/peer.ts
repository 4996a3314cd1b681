/**
 * What bench/step-overhead.ts needs from a peer. This file imports nothing, so the root
 * benchmark can import its type without bench/peers being installed.
 */
export interface Peer {
  /** Row label: the peer's version and its durability setting. */
  label: string;
  /** One line printed under the table: what a step costs this peer, for judging the comparison. */
  note: string;
  /**
   * Runs `warmUp` steps, then a measured workflow of `steps` trivial steps, on fresh storage.
   * Returns one wall-clock gap (µs) per measured step, between consecutive step completions.
   */
  run(steps: number, warmUp: number): Promise<number[]>;
}

/** A peer module's export: its peers, or a rejection saying why they can't run here. */
export type LoadPeers = () => Promise<Peer[]>;
