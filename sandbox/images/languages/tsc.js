// The TypeScript compiler driver of code.tests (trusted, part of the languages runtime: setup.sh
// copies it to /opt/verifiers/ts/tsc.js and builds its start-up snapshot).
//
//   node --snapshot-blob /opt/verifiers/ts/tsc.blob /opt/verifiers/ts/tsc.js check|transpile SRC OUT
//
// `check` (the default of code.tests) is what `tsc` does: the candidate's file is type-checked
// against the ES2020 library and Node's own types (@types/node, so `require('fs')` and
// `process.stdin` are typed), and any error, syntax or type, fails the build with
// SRC(line,col): error TSnnnn, the model's `fail` with the line, like a C++ compile error.
// JavaScript is written only when there is no error (`tsc` writes it even on errors: the exit
// code, not the file, is the verdict). `transpile` (spec `typecheck: false`) only strips types,
// as tsx, esbuild and ts-node --transpile-only do: syntax errors fail, type errors do not.
//
// The options are tsc's own defaults (no tsconfig: not `strict`), plus skipLibCheck: the
// library .d.ts files are the runtime's, trusted and identical for every sample; checking them
// never changes a verdict on the candidate's file.
//
// Why a snapshot: a check spends ~2 s of CPU before it looks at the candidate's 10 lines (load
// typescript.js, parse and bind ~56k lines of lib.es2020 + @types/node .d.ts); the check itself
// takes ~30 ms. `node --build-snapshot` runs this file once per runtime build: it loads the
// compiler, parses and binds those library files through a warm-up program, and node saves the
// heap. Every check then starts from that heap and reuses the parsed, bound library files (as
// tsserver's document registry does between programs): ~0.25 s of CPU. Each check is still a
// fresh process of an immutable blob, so nothing of one sample reaches the next. Without the
// blob (or with a node that cannot read it) the same code parses everything itself: the same
// verdict, slower. The runtime check (setup.sh) compares both paths.
'use strict';
const fs = require('fs');
const NM = '/opt/npm/node_modules';
const OPTIONS = {
  lib: ['lib.es2020.d.ts'],
  types: ['node'],
  typeRoots: [`${NM}/@types`],
  skipLibCheck: true,
  noEmitOnError: true,
  allowJs: false,
};

function loadTs() {
  const file = `${NM}/typescript/lib/typescript.js`;
  const v8 = require('v8');
  if (!(v8.startupSnapshot && v8.startupSnapshot.isBuildingSnapshot())) return require(file);
  // A snapshot's entry may require built-in modules only: evaluate the (single-file) compiler.
  const body = fs.readFileSync(file, 'utf8');
  const mod = { exports: {} };
  // eslint-disable-next-line no-new-func
  new Function('exports', 'require', 'module', '__filename', '__dirname', body)(
    mod.exports, require, mod, file, `${NM}/typescript/lib`);
  return mod.exports;
}

function compilerOptions(ts) {
  return {
    ...OPTIONS,
    target: ts.ScriptTarget.ES2020,
    module: ts.ModuleKind.CommonJS,
    newLine: ts.NewLineKind.LineFeed,
  };
}

// The library files' parsed (and, once a program has been checked, bound) source files.
function cachingHost(ts, options, cache) {
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile;
  host.getSourceFile = (name, version, onError, create) => {
    if (!name.startsWith(`${NM}/`)) return read.call(host, name, version, onError, create);
    let file = cache.get(name);
    if (file === undefined) {
      file = read.call(host, name, version, onError, create);
      if (file !== undefined) cache.set(name, file);
    }
    return file;
  };
  return host;
}

function errors(ts, program) {
  return ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);
}

const state = globalThis.__verifiersTsc || { ts: loadTs(), libs: new Map() };

if (require('v8').startupSnapshot && require('v8').startupSnapshot.isBuildingSnapshot()) {
  // Warm-up: parse and bind every library file a candidate's program loads.
  const ts = state.ts;
  const warm = '/tmp/verifiers-tsc-warmup.ts';
  fs.writeFileSync(warm, 'const x: number = 1;\nprocess.stdout.write(String(x));\n');
  const options = compilerOptions(ts);
  const program = ts.createProgram([warm], options, cachingHost(ts, options, state.libs));
  if (errors(ts, program).length) throw new Error('tsc warm-up program does not check');
  fs.unlinkSync(warm);
  globalThis.__verifiersTsc = state;
} else {
  main(state.ts, state.libs, process.argv.slice(2));
}

function report(ts, src, diags) {
  let shown = 0;
  for (const d of diags) {
    if (shown++ >= 20) break;
    const msg = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file && d.start !== undefined) {
      const p = d.file.getLineAndCharacterOfPosition(d.start);
      process.stderr.write(`${d.file.fileName}(${p.line + 1},${p.character + 1}): error TS${d.code}: ${msg}\n`);
    } else {
      process.stderr.write(`${src}: error TS${d.code}: ${msg}\n`);
    }
  }
  if (diags.length > shown) process.stderr.write(`... and ${diags.length - shown} more errors\n`);
  process.exit(1);
}

function main(ts, libs, [mode, src, out]) {
  const options = compilerOptions(ts);
  if (mode === 'transpile') {
    const text = fs.readFileSync(src, 'utf8');
    const res = ts.transpileModule(text, { fileName: src, reportDiagnostics: true, compilerOptions: options });
    if (res.diagnostics && res.diagnostics.length) report(ts, src, res.diagnostics);
    fs.writeFileSync(out, res.outputText);
  } else if (mode === 'check') {
    const program = ts.createProgram([src], options, cachingHost(ts, options, libs));
    const diags = errors(ts, program);
    if (diags.length) report(ts, src, diags);
    let written = false;
    const emitted = program.emit(undefined, (_name, text) => {
      fs.writeFileSync(out, text);
      written = true;
    });
    if (emitted.emitSkipped || !written) report(ts, src, emitted.diagnostics || []);
  } else {
    process.stderr.write(`tsc.js: unknown mode ${mode}; use check or transpile\n`);
    process.exit(2);
  }
}
