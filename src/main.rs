fn main() {
    let path = std::env::args().nth(1).expect("file");
    let text = std::fs::read_to_string(&path).expect("read");
    let mut map = rmoc::diag::SourceMap::default();
    let id = map.add(path.clone(), text.clone());
    match rmoc::syntax::parse(&text, id) {
        Ok(ast) => println!("{} classes", ast.classes.len()),
        Err(d) => print!("{}", rmoc::diag::render(&map, &[d], false)),
    }
}
