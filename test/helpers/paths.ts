/** The transition paths (`from>to`, `-` for none) that the crash tests expect of a run. */

/** Started, lost with its worker (or process), recovered, and finished by another. */
export const RECOVERED_PATH = [
  "->PENDING",
  "PENDING>RUNNING",
  "RUNNING>INTERRUPTED",
  "INTERRUPTED>RESUMING",
  "RESUMING>RUNNING",
  "RUNNING>COMPLETED",
];

/** Started and finished by one worker. */
export const STRAIGHT_PATH = ["->PENDING", "PENDING>RUNNING", "RUNNING>COMPLETED"];
