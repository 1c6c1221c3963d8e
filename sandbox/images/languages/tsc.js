// TypeScript -> JavaScript for code.tests (trusted judge file, runs in the sandbox).
// transpileModule strips types without type-checking (as tsx, esbuild and ts-node
// --transpile-only do): a syntax error fails the build with solution.ts(line,col), a type
// error does not. `tsc` itself would also need @types/node (absent from Debian bookworm) for
// any program that reads stdin, and writes JavaScript even when it reports errors.
'use strict';
const fs = require('fs');
const ts = require('typescript');
const [src, out] = process.argv.slice(2);
const text = fs.readFileSync(src, 'utf8');
const res = ts.transpileModule(text, {
  fileName: src,
  reportDiagnostics: true,
  compilerOptions: { target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.CommonJS },
});
const diags = res.diagnostics || [];
if (diags.length) {
  for (const d of diags) {
    const msg = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file && d.start !== undefined) {
      const p = d.file.getLineAndCharacterOfPosition(d.start);
      process.stderr.write(`${src}(${p.line + 1},${p.character + 1}): error TS${d.code}: ${msg}\n`);
    } else {
      process.stderr.write(`${src}: error TS${d.code}: ${msg}\n`);
    }
  }
  process.exit(1);
}
fs.writeFileSync(out, res.outputText);
