// The thread page's "Share" panel: Copy puts the read-only link on the clipboard. On the link's own
// page (no thread.js there), the messages' Copy buttons work too.
(function () {
  "use strict";

  async function copyText(button, text) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (_error) {
      return; // no clipboard (a page not served over HTTPS): the text stays selectable
    }
    const label = button.dataset.label || button.innerHTML;
    button.dataset.label = label;
    button.textContent = button.dataset.copied;
    setTimeout(function () { button.innerHTML = label; }, 1500);
  }

  const linkButton = document.getElementById("share-link-copy");
  const field = document.getElementById("share-link-url");
  if (linkButton && field) {
    linkButton.addEventListener("click", function () {
      field.select();
      copyText(linkButton, field.value);
    });
  }

  if (document.querySelector(".link-reader")) {
    document.addEventListener("click", function (event) {
      const button = event.target.closest(".copy-message");
      const body = button && button.closest(".message").querySelector(".message-body");
      if (body) copyText(button, body.innerText);
    });
  }
})();
