// systeminformation's index requires every one of its 20 modules (Docker, Wi-Fi, Bluetooth, printers, USB, ...),
// about 730 kB of code that an idle agent would initialise and keep. The agent imports only the three modules it
// calls. They are CommonJS files of the package (it has no "exports" map, so deep imports resolve as usual); their
// functions are the same ones the index re-exports, and take their types from the package's own declarations.
declare module 'systeminformation/lib/cpu.js' {
  export const cpu: typeof import('systeminformation').cpu;
  export const currentLoad: typeof import('systeminformation').currentLoad;
}
declare module 'systeminformation/lib/memory.js' {
  export const mem: typeof import('systeminformation').mem;
}
declare module 'systeminformation/lib/osinfo.js' {
  export const osInfo: typeof import('systeminformation').osInfo;
}
