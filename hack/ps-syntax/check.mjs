// Parses each PowerShell file named on the command line and exits non-zero
// if any has a syntax error, printing where.
import { Parser, Language } from 'web-tree-sitter';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
await Parser.init();
const powershell = await Language.load(require.resolve('tree-sitter-powershell/tree-sitter-powershell.wasm'));
const parser = new Parser();
parser.setLanguage(powershell);

function firstError(node) {
  if (node.isError || node.isMissing) return node;
  for (const child of node.children) {
    if (child.hasError || child.isMissing) {
      const found = firstError(child);
      if (found) return found;
    }
  }
  return node.hasError ? node : null;
}

let failed = 0;
for (const file of process.argv.slice(2)) {
  const tree = parser.parse(readFileSync(file, 'utf8'));
  if (tree.rootNode.hasError) {
    failed++;
    const at = firstError(tree.rootNode);
    const pos = at ? at.startPosition : { row: 0, column: 0 };
    console.log(`${file}:${pos.row + 1}:${pos.column + 1}: PowerShell syntax error near ${JSON.stringify(at ? at.text.slice(0, 40) : '')}`);
  } else {
    console.log(`${file}: ok`);
  }
}
process.exit(failed ? 1 : 0);
