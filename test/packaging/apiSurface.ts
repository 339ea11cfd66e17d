/**
 * Reads a package's public surface the way a TypeScript user sees it: through the `types`
 * condition of its `exports` map, from the compiled `.d.ts` (so `stripInternal` has already
 * removed `@internal` members). Used by the public-API test; no side effects.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import ts from 'typescript';

export interface Surface {
  /** Names that exist at run time (classes, functions, constants). */
  values: string[];
  /** Names that exist only for the type checker (interfaces, type aliases, `export type`). */
  types: string[];
  /**
   * Types a public declaration names, declared in one of our own packages, that the entry does
   * not export: a user can meet them in a signature but cannot import them.
   */
  missing: string[];
}

/** The `.d.ts` a TypeScript user's `import … from '<pkg>'` resolves to, from the `exports` map. */
export function typesEntryOf(packageDir: string): string {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    exports: Record<string, { types: string }>;
  };
  const dot = pkg.exports['.'];
  if (dot === undefined || typeof dot.types !== 'string') throw new Error(`${packageDir}: exports['.'].types is missing`);
  return realpathSync(join(packageDir, dot.types));
}

/**
 * The surface of one entry. `ownRoots` are the real paths of the folders whose declarations
 * count as ours (the workspace packages); types declared elsewhere (Node, pino, the SDK) are
 * other packages' business.
 */
export function surfaceOf(entry: string, ownRoots: readonly string[]): Surface {
  const program = ts.createProgram([entry], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    types: ['node'],
  });
  const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (diagnostics.length > 0) {
    throw new Error(ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dirname(entry), getNewLine: () => '\n' }));
  }
  const checker = program.getTypeChecker();
  const sourceFile = program.getSourceFile(entry);
  if (sourceFile === undefined) throw new Error(`${entry}: not in the program`);
  const moduleSymbol = checker.getSymbolAtLocation(sourceFile);
  if (moduleSymbol === undefined) throw new Error(`${entry}: not a module`);

  const resolve = (symbol: ts.Symbol): ts.Symbol => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
  const isOwn = (declaration: ts.Declaration): boolean => {
    const file = realpathSync(declaration.getSourceFile().fileName);
    return ownRoots.some((root) => file.startsWith(root + sep)) && !file.includes(`${sep}node_modules${sep}`);
  };

  const exported = new Map<ts.Symbol, string>();
  const values: string[] = [];
  const types: string[] = [];
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const target = resolve(symbol);
    exported.set(target, symbol.name);
    // `export type { X }` of a class is a type for the user: it cannot be constructed or tested
    // with instanceof. TypeScript marks such an alias type-only.
    const typeOnly = symbol.declarations?.some((d) => ts.isTypeOnlyImportOrExportDeclaration(d)) ?? false;
    if (!typeOnly && target.flags & ts.SymbolFlags.Value) values.push(symbol.name);
    else types.push(symbol.name);
  }

  // Every type a public declaration names must itself be exported (and so on, transitively).
  const missing = new Set<string>();
  const seen = new Set<ts.Symbol>();
  const visitSymbol = (symbol: ts.Symbol): void => {
    if (seen.has(symbol)) return;
    seen.add(symbol);
    for (const declaration of symbol.declarations ?? []) if (isOwn(declaration)) visitNode(declaration);
  };
  const visitNode = (node: ts.Node): void => {
    // Private members (`#private`, `private x`) are not part of what a user can reach.
    if (ts.canHaveModifiers(node) && ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword)) return;
    if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node) || ts.isTypeQueryNode(node)) {
      const name = ts.isTypeReferenceNode(node) ? node.typeName : ts.isTypeQueryNode(node) ? node.exprName : node.expression;
      const at = checker.getSymbolAtLocation(name);
      if (at !== undefined) {
        const target = resolve(at);
        const own = (target.declarations ?? []).filter(isOwn);
        const isTypeParameter = target.flags & ts.SymbolFlags.TypeParameter;
        // A member reached through a type query or qualified name (`Foo.bar`) belongs to Foo.
        const isMember = target.flags & (ts.SymbolFlags.Property | ts.SymbolFlags.Method | ts.SymbolFlags.EnumMember);
        if (own.length > 0 && !isTypeParameter && !isMember) {
          if (!exported.has(target)) missing.add(target.name);
          visitSymbol(target);
        }
      }
    }
    ts.forEachChild(node, visitNode);
  };
  for (const target of exported.keys()) visitSymbol(target);

  return { values: values.sort(), types: types.sort(), missing: [...missing].sort() };
}
