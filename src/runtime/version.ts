/** The runtime version recorded on every transition. Keep equal to package.json's version. */
export const RUNTIME_VERSION = "0.1.0";
