// The thread page's "Share" panel: Copy puts the read-only link on the clipboard.
(function () {
  "use strict";
  const button = document.getElementById("share-link-copy");
  const field = document.getElementById("share-link-url");
  if (!button || !field) return;
  const label = button.textContent;
  button.addEventListener("click", async function () {
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
    } catch (_error) {
      document.execCommand("copy"); // an older browser, or a page not served over HTTPS
    }
    button.textContent = button.dataset.copied;
    setTimeout(function () { button.textContent = label; }, 1500);
  });
})();
