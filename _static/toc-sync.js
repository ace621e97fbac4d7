// "On this page": highlight the section being read, whatever the scroll.
// pydata-sphinx-theme 0.17 moves the highlight only when an IntersectionObserver sees a heading
// inside the top 30% of the window; a jump (End key, a dragged scrollbar, a link, a long fast
// scroll) carries headings past that band unseen, and the highlight stays where it was. Here,
// after each scroll, the entry of the last heading above that line is highlighted (the last one
// when the page is scrolled to its end), with the theme's own classes.
(function () {
  "use strict";
  function setup() {
    const nav = document.querySelector("#pst-page-toc-nav");
    if (!nav) { return; }
    const links = Array.from(nav.querySelectorAll("a[href^='#']"));
    const entries = Array.from(nav.querySelectorAll(".toc-entry"));
    const targets = links.map(function (link) {
      const target = document.getElementById(decodeURIComponent(link.hash.slice(1)));
      if (!target) { return null; }
      return target.querySelector("h1, h2, h3, h4, h5, h6") || target;
    });
    let pending = false;
    function sync() {
      pending = false;
      const line = window.innerHeight * 0.3;
      const atEnd = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2;
      let current = -1;
      targets.forEach(function (heading, i) {
        if (heading && (atEnd || heading.getBoundingClientRect().top <= line)) { current = i; }
      });
      links.forEach(function (link, i) {
        link.classList.toggle("active", i === current);
        if (i === current) { link.setAttribute("aria-current", "true"); } else { link.removeAttribute("aria-current"); }
      });
      entries.forEach(function (entry) {
        entry.classList.toggle("active", current >= 0 && entry.contains(links[current]));
      });
    }
    window.addEventListener("scroll", function () {
      if (!pending) { pending = true; window.requestAnimationFrame(sync); }
    }, { passive: true });
    window.addEventListener("load", sync);
    sync();
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", setup); } else { setup(); }
})();
