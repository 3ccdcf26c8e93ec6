// MathJax 3, served from this site (assets/mathjax/, copied from PyPI's django-static-mathjax
// at build time). Typeset explicitly on every page Material shows, including after instant
// navigation: chapter math (.arithmatex) and notebook Markdown cells.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown|jp-MarkdownOutput",
  },
  startup: { typeset: false },
};

document$.subscribe(() => {
  const nodes = document.querySelectorAll(".arithmatex, .jp-RenderedMarkdown, .jp-MarkdownOutput");
  if (nodes.length === 0) return;
  MathJax.startup.promise.then(() => {
    MathJax.typesetClear();
    return MathJax.typesetPromise([...nodes]);
  });
});
