/** The API version every response announces (contract section 1). */
export const API_VERSION = '2026-11-01.beta'
