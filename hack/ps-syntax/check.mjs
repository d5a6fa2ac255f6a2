// Parses each PowerShell file named on the command line and exits non-zero
// if any has a syntax error, printing where.
//
// With --commands first, it prints instead, for each file, one JSON line
// {"file", "commands": [{"name", "line", "text"}]}: every command and
// method call of the script, in source order as PowerShell starts them (one
// after those in its arguments and script blocks), so that tests can check
// what a script does and in which order without running it. A method
// call's name is its member's, with a dot: ".AcceptEula"; a throw, exit,
// return, break or continue is listed by its keyword.
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

// commands lists the commands and method calls under node in the order
// described above. A command's name is its command_name, or for
// `& <expression>` the expression's text.
function commands(node, out) {
  for (const child of node.namedChildren) commands(child, out);
  let name = null;
  if (node.type === 'command') {
    const n = node.childForFieldName('command_name');
    name = n ? n.text : '';
  } else if (node.type === 'invokation_expression') {
    const members = node.namedChildren.filter((c) => c.type === 'member_name');
    if (members.length) name = '.' + members[members.length - 1].text;
  } else if (node.type === 'flow_control_statement') {
    name = node.text.split(/\s/)[0].toLowerCase();
  }
  if (name !== null) {
    out.push({ name, line: node.startPosition.row + 1, text: node.text.replace(/\s+/g, ' ').trim() });
  }
  return out;
}

let args = process.argv.slice(2);
const listCommands = args[0] === '--commands';
if (listCommands) args = args.slice(1);

let failed = 0;
for (const file of args) {
  const tree = parser.parse(readFileSync(file, 'utf8'));
  if (tree.rootNode.hasError) {
    failed++;
    const at = firstError(tree.rootNode);
    const pos = at ? at.startPosition : { row: 0, column: 0 };
    console.log(`${file}:${pos.row + 1}:${pos.column + 1}: PowerShell syntax error near ${JSON.stringify(at ? at.text.slice(0, 40) : '')}`);
  } else if (listCommands) {
    console.log(JSON.stringify({ file, commands: commands(tree.rootNode, []) }));
  } else {
    console.log(`${file}: ok`);
  }
}
process.exit(failed ? 1 : 0);
