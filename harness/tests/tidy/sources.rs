//! The workspace's Rust sources read as a module tree per crate (with `syn`), for two house
//! rules: no import circle between the files of a crate, and no environment read in library code
//! outside a `from_env` constructor.
//!
//! A crate is read from its root file (`lib.rs`, `main.rs`) along its `mod` declarations;
//! `#[cfg(test)]` items and the modules they declare are left out (tests may import anything).
//! A file's imports are its `use` trees and the paths in its code (`crate::a::b`, `super::c`, a
//! child module's name, a name a `use` bound to a module), each resolved to the deepest module it
//! names; the file holding that module is the import's target. An import of a file that holds
//! one of the importing module's ancestors is nesting, not an edge: a child may use what its
//! parent holds (inline modules and re-exports there included), and the parent its children.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// A module's path from its crate's root (`["http", "compat"]`); the root is empty.
type ModulePath = Vec<String>;

/// One crate's modules, what its files import, and where they read the environment.
#[derive(Debug, Default)]
pub struct CrateSources {
    /// Each module and the file that holds it (an inline module is held by its parent's file).
    modules: BTreeMap<ModulePath, PathBuf>,
    /// Every path a file names that may point into the crate, resolved after the whole crate
    /// is read (a `use` may bind a name after the code that uses it).
    references: Vec<Reference>,
    /// Names a `use` bound in a module: (module, name) → the path it binds, as written there.
    aliases: BTreeMap<(ModulePath, String), Vec<String>>,
    /// Environment reads, with the functions around them.
    pub env_reads: Vec<EnvRead>,
    /// Files that could not be read or parsed, or `mod` declarations without a file.
    pub problems: Vec<String>,
}

#[derive(Debug)]
struct Reference {
    file: PathBuf,
    line: usize,
    module: ModulePath,
    segments: Vec<String>,
}

/// One read of the process environment (`std::env::var`, `var_os`, `vars`, `vars_os`) or of the
/// package's folder at compile time (`env!("CARGO_MANIFEST_DIR")`).
#[derive(Debug, Clone)]
pub struct EnvRead {
    pub file: PathBuf,
    pub line: usize,
    /// The functions it sits in, outermost first (empty at item level, e.g. in a `static`).
    pub functions: Vec<String>,
    /// What it reads, as written (`std::env::var_os`, `env!(CARGO_MANIFEST_DIR)`).
    pub what: String,
}

/// An import of one file by another, with where it is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Import {
    pub line: usize,
    pub path: String,
}

/// Files that import each other in a circle: `members` sorted, and one circle through them in
/// order (`cycle`, the first file repeated at the end) with the import behind each step.
#[derive(Debug)]
pub struct Circle {
    pub members: Vec<PathBuf>,
    pub cycle: Vec<PathBuf>,
    pub steps: Vec<Import>,
}

impl Circle {
    /// `a.rs → b.rs → a.rs`, then each step's import with its line.
    pub fn describe(&self, base: &Path) -> String {
        let show = |path: &PathBuf| {
            path.strip_prefix(base)
                .unwrap_or(path)
                .display()
                .to_string()
        };
        let order: Vec<String> = self.cycle.iter().map(show).collect();
        let mut text = order.join(" → ");
        for (pair, import) in self.cycle.windows(2).zip(&self.steps) {
            text.push_str(&format!(
                "\n    {}:{} uses `{}` ({})",
                show(&pair[0]),
                import.line,
                import.path,
                show(&pair[1])
            ));
        }
        if self.members.len() + 1 > self.cycle.len() {
            let all: Vec<String> = self.members.iter().map(show).collect();
            text.push_str(&format!("\n    (the circle's files: {})", all.join(", ")));
        }
        text
    }
}

/// Reads the crate whose root file is `root` (its `lib.rs` or `main.rs`).
pub fn read_crate(root: &Path) -> CrateSources {
    let mut sources = CrateSources::default();
    let root_dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut queue = VecDeque::from([(root.to_path_buf(), ModulePath::new(), root_dir)]);
    sources
        .modules
        .insert(ModulePath::new(), root.to_path_buf());
    while let Some((file, module, child_dir)) = queue.pop_front() {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(err) => {
                sources
                    .problems
                    .push(format!("{}: cannot read: {err}", file.display()));
                continue;
            }
        };
        let parsed = match syn::parse_file(&text) {
            Ok(parsed) => parsed,
            Err(err) => {
                let line = err.span().start().line;
                sources
                    .problems
                    .push(format!("{}:{line}: cannot parse: {err}", file.display()));
                continue;
            }
        };
        let mut reader = FileReader {
            sources: &mut sources,
            file: file.clone(),
            module,
            child_dir,
            functions: Vec::new(),
            declared: Vec::new(),
        };
        reader.visit_file(&parsed);
        queue.extend(reader.declared);
    }
    sources
}

/// `#[cfg(test)]`, or a `cfg` that needs `test` in every case (`cfg(all(test, …))`).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && {
            let tokens = attr
                .meta
                .require_list()
                .map(|list| list.tokens.to_string())
                .unwrap_or_default();
            tokens == "test" || tokens.starts_with("all (test")
        }
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item;
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Reads one file: its modules, references, aliases and environment reads.
struct FileReader<'a> {
    sources: &'a mut CrateSources,
    file: PathBuf,
    /// The module the reader is in (the file's own, or an inline module inside it).
    module: ModulePath,
    /// Where the current module's `mod x;` files live.
    child_dir: PathBuf,
    functions: Vec<String>,
    /// Files of the `mod x;` declarations met, to read next.
    declared: Vec<(PathBuf, ModulePath, PathBuf)>,
}

impl FileReader<'_> {
    fn line(&self, span: proc_macro2::Span) -> usize {
        span.start().line
    }

    fn reference(&mut self, segments: Vec<String>, line: usize) {
        if segments.is_empty() {
            return;
        }
        self.sources.references.push(Reference {
            file: self.file.clone(),
            line,
            module: self.module.clone(),
            segments,
        });
    }

    /// Records every leaf of a `use` tree, and the names it binds.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.unraw_string());
                self.use_tree(prefix, &path.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let ident = name.ident.unraw_string();
                let (full, bound) = if ident == "self" {
                    (prefix.clone(), prefix.last().cloned())
                } else {
                    let mut full = prefix.clone();
                    full.push(ident.clone());
                    (full, Some(ident))
                };
                self.bind(bound, &full);
                self.reference(full, line);
            }
            syn::UseTree::Rename(rename) => {
                let ident = rename.ident.unraw_string();
                let mut full = prefix.clone();
                if ident != "self" {
                    full.push(ident);
                }
                self.bind(Some(rename.rename.unraw_string()), &full);
                self.reference(full, line);
            }
            syn::UseTree::Glob(_) => self.reference(prefix.clone(), line),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree, line);
                }
            }
        }
    }

    fn bind(&mut self, name: Option<String>, path: &[String]) {
        if let Some(name) = name.filter(|name| name != "_") {
            self.sources
                .aliases
                .insert((self.module.clone(), name), path.to_vec());
        }
    }

    fn env_read(&mut self, what: String, line: usize) {
        self.sources.env_reads.push(EnvRead {
            file: self.file.clone(),
            line,
            functions: self.functions.clone(),
            what,
        });
    }

    fn declare_module(&mut self, item: &syn::ItemMod) {
        let name = item.ident.unraw_string();
        let mut module = self.module.clone();
        module.push(name.clone());
        if let Some((_, items)) = &item.content {
            self.sources
                .modules
                .insert(module.clone(), self.file.clone());
            let outer_module = std::mem::replace(&mut self.module, module);
            let outer_dir = self.child_dir.clone();
            self.child_dir = outer_dir.join(&name);
            for item in items {
                self.visit_item(item);
            }
            self.module = outer_module;
            self.child_dir = outer_dir;
            return;
        }
        let explicit = item.attrs.iter().find_map(|attr| match &attr.meta {
            syn::Meta::NameValue(pair) if pair.path.is_ident("path") => match &pair.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        });
        let (file, child_dir) = match explicit {
            Some(relative) => {
                let file = self.file.parent().unwrap_or(Path::new(".")).join(relative);
                let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
                (file, dir)
            }
            None => {
                let flat = self.child_dir.join(format!("{name}.rs"));
                let nested = self.child_dir.join(&name).join("mod.rs");
                if flat.is_file() {
                    (flat, self.child_dir.join(&name))
                } else if nested.is_file() {
                    (nested, self.child_dir.join(&name))
                } else {
                    let line = self.line(item.ident.span());
                    self.sources.problems.push(format!(
                        "{}:{line}: `mod {name};` has neither {} nor {}",
                        self.file.display(),
                        flat.display(),
                        nested.display()
                    ));
                    return;
                }
            }
        };
        self.sources.modules.insert(module.clone(), file.clone());
        self.declared.push((file, module, child_dir));
    }
}

impl<'ast> Visit<'ast> for FileReader<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        match item {
            syn::Item::Mod(module) => self.declare_module(module),
            syn::Item::Use(item_use) => {
                if item_use.leading_colon.is_none() {
                    let line = self.line(item_use.span());
                    self.use_tree(&mut Vec::new(), &item_use.tree, line);
                }
            }
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.functions.push(item.sig.ident.unraw_string());
        syn::visit::visit_item_fn(self, item);
        self.functions.pop();
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.functions.push(item.sig.ident.unraw_string());
        syn::visit::visit_impl_item_fn(self, item);
        self.functions.pop();
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        self.functions.push(item.sig.ident.unraw_string());
        syn::visit::visit_trait_item_fn(self, item);
        self.functions.pop();
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path
            .segments
            .iter()
            .map(|segment| segment.ident.unraw_string())
            .collect();
        let line = self.line(path.span());
        if segments.len() >= 2 {
            let tail = &segments[segments.len() - 2..];
            if tail[0] == "env" && ENV_READERS.contains(&tail[1].as_str()) {
                self.env_read(segments.join("::"), line);
            }
        }
        if path.leading_colon.is_none() && segments.len() >= 2 {
            self.reference(segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let name = mac
            .path
            .segments
            .last()
            .map(|segment| segment.ident.unraw_string())
            .unwrap_or_default();
        let tokens: String = mac
            .tokens
            .to_string()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let line = self.line(mac.path.span());
        if (name == "env" || name == "option_env") && tokens.contains("CARGO_MANIFEST_DIR") {
            self.env_read(format!("{name}!(CARGO_MANIFEST_DIR)"), line);
        }
        // Macro arguments are tokens to `syn`; an environment read inside one still counts.
        for reader in ENV_READERS {
            if tokens.contains(&format!("env::{reader}(")) {
                self.env_read(format!("env::{reader} inside {name}!"), line);
            }
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// The `std::env` functions that read the process environment.
const ENV_READERS: [&str; 4] = ["var", "var_os", "vars", "vars_os"];

trait Unraw {
    fn unraw_string(&self) -> String;
}

impl Unraw for syn::Ident {
    fn unraw_string(&self) -> String {
        let text = self.to_string();
        text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
    }
}

impl CrateSources {
    /// The module `segments` names when written in `module`, or `None` when it names nothing in
    /// this crate (another crate, a local item, a generic).
    fn resolve(&self, module: &[String], segments: &[String], depth: usize) -> Option<ModulePath> {
        let (first, rest) = segments.split_first()?;
        let absolute: ModulePath = match first.as_str() {
            "crate" => rest.to_vec(),
            "self" => module.iter().chain(rest).cloned().collect(),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let kept = module.len().checked_sub(ups)?;
                module[..kept]
                    .iter()
                    .chain(&segments[ups..])
                    .cloned()
                    .collect()
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if self.modules.contains_key(&child) {
                    module.iter().chain(segments).cloned().collect()
                } else if depth < 8
                    && let Some(bound) = self.aliases.get(&(module.to_vec(), first.clone()))
                {
                    let mut target = self.resolve(module, bound, depth + 1)?;
                    target.extend(rest.iter().cloned());
                    target
                } else {
                    return None;
                }
            }
        };
        (0..=absolute.len())
            .rev()
            .map(|len| absolute[..len].to_vec())
            .find(|prefix| self.modules.contains_key(prefix))
    }

    /// Which file imports which, with the first import behind each edge. Imports of the file
    /// itself, or of a file holding an ancestor of the module they are written in, are nesting
    /// and left out.
    pub fn file_imports(&self) -> BTreeMap<PathBuf, BTreeMap<PathBuf, Import>> {
        let mut edges: BTreeMap<PathBuf, BTreeMap<PathBuf, Import>> = BTreeMap::new();
        for reference in &self.references {
            let Some(target) = self.resolve(&reference.module, &reference.segments, 0) else {
                continue;
            };
            let target_file = &self.modules[&target];
            // Nesting: the target is an ancestor of the importing module, or lives in an
            // ancestor's file (an inline module of the parent, a re-export there).
            let nesting = (0..=reference.module.len())
                .any(|len| self.modules[&reference.module[..len]] == *target_file);
            if nesting || *target_file == reference.file {
                continue;
            }
            let import = Import {
                line: reference.line,
                path: reference.segments.join("::"),
            };
            edges
                .entry(reference.file.clone())
                .or_default()
                .entry(target_file.clone())
                .and_modify(|kept| {
                    if import < *kept {
                        *kept = import.clone();
                    }
                })
                .or_insert(import);
        }
        edges
    }

    /// The imports by which a file of a module below `module` (`["model_server"]`) uses the
    /// file holding `module` itself: a child importing its parent, which the circle check
    /// allows as nesting. Each with the importing file.
    pub fn parent_imports(&self, module: &[&str]) -> Vec<(PathBuf, Import)> {
        let module: ModulePath = module.iter().map(|part| part.to_string()).collect();
        let Some(parent_file) = self.modules.get(&module) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for reference in &self.references {
            let below = reference.module.len() > module.len()
                && reference.module.starts_with(&module)
                && reference.file != *parent_file;
            if !below {
                continue;
            }
            let Some(target) = self.resolve(&reference.module, &reference.segments, 0) else {
                continue;
            };
            if self.modules[&target] == *parent_file {
                found.push((
                    reference.file.clone(),
                    Import {
                        line: reference.line,
                        path: reference.segments.join("::"),
                    },
                ));
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// Every set of files that import each other, with one circle through each set.
    pub fn circles(&self) -> Vec<Circle> {
        let edges = self.file_imports();
        strongly_connected(&edges)
            .into_iter()
            .filter(|members| members.len() > 1)
            .map(|members| {
                let cycle = cycle_through(&edges, &members);
                let steps = cycle
                    .windows(2)
                    .map(|pair| edges[&pair[0]][&pair[1]].clone())
                    .collect();
                Circle {
                    members,
                    cycle,
                    steps,
                }
            })
            .collect()
    }
}

/// Tarjan's strongly connected components, each sorted, in a stable order.
fn strongly_connected(edges: &BTreeMap<PathBuf, BTreeMap<PathBuf, Import>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeMap<PathBuf, Import>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a PathBuf) {
        let next = state.index.len();
        state.index.insert(node, next);
        state.low.insert(node, next);
        state.stack.push(node);
        state.on_stack.insert(node);
        for target in state.edges.get(node).into_iter().flat_map(|t| t.keys()) {
            if !state.index.contains_key(target) {
                visit(state, target);
                let low = state.low[node].min(state.low[target]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(target) {
                let low = state.low[node].min(state.index[target]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.push(member.clone());
                if member == node {
                    break;
                }
            }
            component.sort();
            state.found.push(component);
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.found.sort();
    state.found
}

/// The shortest circle from the first member back to itself, inside the component.
fn cycle_through(
    edges: &BTreeMap<PathBuf, BTreeMap<PathBuf, Import>>,
    members: &[PathBuf],
) -> Vec<PathBuf> {
    let start = &members[0];
    let mut came_from: BTreeMap<&PathBuf, &PathBuf> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for target in edges.get(node).into_iter().flat_map(|t| t.keys()) {
            if !members.contains(target) {
                continue;
            }
            if target == start {
                let mut cycle = vec![start.clone(), node.clone()];
                let mut at = node;
                while let Some(previous) = came_from.get(at) {
                    cycle.push((*previous).clone());
                    at = previous;
                }
                cycle.reverse();
                return cycle;
            }
            if target != start && !came_from.contains_key(target) {
                came_from.insert(target, node);
                queue.push_back(target);
            }
        }
    }
    unreachable!("a strongly connected component has a circle through each member")
}
