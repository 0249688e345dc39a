// The thread sidebar's search: typing filters the sidebar's own threads by title at once (groups left
// empty are hidden); Enter opens the thread list's search, which also looks inside messages.
"use strict";

function startSidebarSearch() {
  const input = document.getElementById("sidebar-search");
  const sidebar = document.getElementById("thread-sidebar");
  if (!input || !sidebar) return;
  input.addEventListener("input", () => {
    const words = input.value.trim().toLocaleLowerCase();
    for (const item of sidebar.querySelectorAll("li.sidebar-item")) {
      const title = item.querySelector(".sidebar-title");
      item.hidden = Boolean(words) && !(title && title.textContent.toLocaleLowerCase().includes(words));
    }
    for (const heading of sidebar.querySelectorAll(".sidebar-group")) {
      const list = heading.nextElementSibling;
      if (!list || list.tagName !== "OL") continue;
      const shown = [...list.children].some((item) => !item.hidden);
      heading.hidden = !shown;
      list.hidden = !shown;
    }
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startSidebarSearch);
else startSidebarSearch();
