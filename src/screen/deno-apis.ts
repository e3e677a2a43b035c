// Which Deno permission each `Deno.*` API needs (checked against Deno 2.9.6 with --no-prompt).
//
// Screening reports a use of an API whose permission the tool does not have, so an author learns at
// creation time instead of from a NotCapable error at run time. APIs that need no permission
// (Deno.pid, Deno.cwd, Deno.execPath, Deno.memoryUsage, Deno.cpuUsage, Deno.createHttpClient ...)
// are not listed. `net` is granted by a non-empty host list; the others only by extraPermissions.

/** A Deno permission flag family. */
export type DenoPermission = 'read' | 'write' | 'net' | 'env' | 'run' | 'ffi' | 'sys';

const READ = ['read'] as const;
const WRITE = ['write'] as const;
const READ_WRITE = ['read', 'write'] as const;
const NET = ['net'] as const;
const RUN = ['run'] as const;
const FFI = ['ffi'] as const;
const SYS = ['sys'] as const;

const TABLE: Record<string, readonly DenoPermission[]> = {
  // filesystem, read
  readFile: READ,
  readFileSync: READ,
  readTextFile: READ,
  readTextFileSync: READ,
  readDir: READ,
  readDirSync: READ,
  readLink: READ,
  readLinkSync: READ,
  realPath: READ,
  realPathSync: READ,
  stat: READ,
  statSync: READ,
  lstat: READ,
  lstatSync: READ,
  open: READ,
  openSync: READ,
  watchFs: READ,
  chdir: READ,
  // filesystem, write (some need both, as Deno checks both)
  writeFile: WRITE,
  writeFileSync: WRITE,
  writeTextFile: WRITE,
  writeTextFileSync: WRITE,
  remove: WRITE,
  removeSync: WRITE,
  mkdir: WRITE,
  mkdirSync: WRITE,
  makeTempDir: WRITE,
  makeTempDirSync: WRITE,
  makeTempFile: WRITE,
  makeTempFileSync: WRITE,
  truncate: WRITE,
  truncateSync: WRITE,
  chmod: WRITE,
  chmodSync: WRITE,
  chown: WRITE,
  chownSync: WRITE,
  utime: WRITE,
  utimeSync: WRITE,
  create: READ_WRITE,
  createSync: READ_WRITE,
  copyFile: READ_WRITE,
  copyFileSync: READ_WRITE,
  rename: READ_WRITE,
  renameSync: READ_WRITE,
  symlink: READ_WRITE,
  symlinkSync: READ_WRITE,
  link: READ_WRITE,
  linkSync: READ_WRITE,
  // network
  connect: NET,
  connectTls: NET,
  startTls: NET,
  listen: NET,
  listenTls: NET,
  listenDatagram: NET,
  serve: NET,
  serveHttp: NET,
  resolveDns: NET,
  connectQuic: NET,
  QuicEndpoint: NET,
  // environment
  env: ['env'],
  // subprocesses and signals to other processes
  Command: RUN,
  ChildProcess: RUN,
  Process: RUN,
  run: RUN,
  spawn: RUN,
  spawnAndWait: RUN,
  spawnAndWaitSync: RUN,
  kill: RUN,
  // foreign functions
  dlopen: FFI,
  UnsafeCallback: FFI,
  UnsafeFnPointer: FFI,
  UnsafePointer: FFI,
  UnsafePointerView: FFI,
  // system information
  hostname: SYS,
  osRelease: SYS,
  osUptime: SYS,
  loadavg: SYS,
  networkInterfaces: SYS,
  systemMemoryInfo: SYS,
  uid: SYS,
  gid: SYS,
  umask: SYS,
};

/** The permissions `Deno.<name>` needs, or an empty list when it needs none (or is unknown). */
export function denoApiPermissions(name: string): readonly DenoPermission[] {
  return Object.hasOwn(TABLE, name) ? (TABLE[name] as readonly DenoPermission[]) : [];
}
