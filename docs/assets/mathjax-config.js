// MathJax 3, served from this site (assets/mathjax/, copied from PyPI's django-static-mathjax
// at build time), and loaded only by pages that have math: it is the largest file a page can
// load. Typesets explicitly on every page Material shows, including after instant navigation:
// chapter math (.arithmatex) and notebook Markdown cells.
window.MathJax = {
  loader: { load: ["input/tex", "output/chtml", "a11y/assistive-mml"] },
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    // only the classes below are typeset; the default ignore list, not ".*", which would also
    // match the class-less <p> inside notebook Markdown cells
    ignoreHtmlClass: "tex2jax_ignore|mathjax_ignore",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown|jp-MarkdownOutput",
  },
  startup: { typeset: false },
};

const mathjaxUrl = new URL("mathjax/startup.js", document.currentScript.src).href;
let mathjaxLoaded = null;

function loadMathJax() {
  if (!mathjaxLoaded) {
    mathjaxLoaded = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = mathjaxUrl;
      script.async = true;
      script.onload = () => MathJax.startup.promise.then(resolve);
      script.onerror = reject;
      document.head.appendChild(script);
    });
  }
  return mathjaxLoaded;
}

function mathNodes() {
  const chapter = [...document.querySelectorAll(".arithmatex")];
  const notebook = [...document.querySelectorAll(".jp-RenderedMarkdown, .jp-MarkdownOutput")].filter(
    (node) => /\$|\\\(|\\\[/.test(node.textContent),
  );
  return [...chapter, ...notebook];
}

document$.subscribe(() => {
  const nodes = mathNodes();
  if (nodes.length === 0) return;
  loadMathJax().then(() => {
    // instant navigation replaces <head>, and MathJax's stylesheet with it: put it back
    const styles = MathJax.startup.output.chtmlStyles;
    if (styles && !styles.isConnected) document.head.appendChild(styles);
    MathJax.typesetClear();
    return MathJax.typesetPromise(nodes).then(() => {
      // wide display math scrolls sideways (site.css): make it reachable by keyboard too
      nodes.forEach((node) => {
        if (node.scrollWidth > node.clientWidth) node.tabIndex = 0;
      });
    });
  });
});
