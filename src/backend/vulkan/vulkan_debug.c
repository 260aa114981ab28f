/* vulkan_debug.c — XPULUA_VK_MESSAGES=FILE: every message of the loader's layers (the Khronos
 * validation layer, when VK_INSTANCE_LAYERS names it) appended to FILE, one line each, through
 * a VK_EXT_debug_utils messenger: chained into vkCreateInstance (so the instance's own creation
 * is covered) and then kept to exit, like the instance. Without the variable nothing is asked of
 * the loader. Lines are "<pid> <severity> <kind> <message id>: <text>", each one write(2) in
 * append mode, so the processes a spec starts share the file. The loader's own chatter (general
 * information) is left out; the validation layer's information is kept, as it says the layer
 * ran. Uses the C library. */
#include "vulkan_api.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *messages_path(void)
{
	const char *p = getenv("XPULUA_VK_MESSAGES");
	return p && *p ? p : NULL;
}

static const char *severity_word(VkDebugUtilsMessageSeverityFlagBitsEXT s)
{
	return s & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT     ? "error"
	     : s & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT ? "warning"
	     : s & VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT    ? "info"
								     : "verbose";
}

static const char *kind_word(VkDebugUtilsMessageTypeFlagsEXT t)
{
	return t & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT    ? "validation"
	     : t & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT ? "performance"
								     : "general";
}

static void append_line(const char *path, const char *line, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		ssize_t w = write(fd, line, n);
		(void)w; /* nowhere to report a failed report */
		close(fd);
	}
}

void xpu_vk_debug_note(const char *what, const char *kernel, const uint32_t block[3])
{
	const char *path = messages_path();
	if (!path)
		return;
	char line[256];
	int n = snprintf(line, sizeof line, "%ld note %s %s block %ux%ux%u\n", (long)getpid(), what, kernel,
			 block[0], block[1], block[2]);
	if (n > 0 && (size_t)n < sizeof line)
		append_line(path, line, (size_t)n);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
						 VkDebugUtilsMessageTypeFlagsEXT types,
						 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
	const char *path = messages_path();
	bool chatter = severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT &&
		       !(types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) &&
		       !(data->pMessageIdName && strstr(data->pMessageIdName, "khronos-validation"));
	if (!path || chatter)
		return VK_FALSE;
	char line[4096];
	int n = snprintf(line, sizeof line, "%ld %s %s %s: %s\n", (long)getpid(), severity_word(severity),
			 kind_word(types), data->pMessageIdName ? data->pMessageIdName : "-", data->pMessage ? data->pMessage : "");
	if (n < 0)
		return VK_FALSE;
	if ((size_t)n >= sizeof line) { /* a cut line still ends in a newline */
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	for (int i = 0; i < n - 1; i++) /* one message, one line */
		if (line[i] == '\n')
			line[i] = ' ';
	append_line(path, line, (size_t)n);
	return VK_FALSE; /* the call goes on as it would without the layer */
}

static VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
	.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
	.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT |
			   VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
			   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
	.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
		       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
		       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
	.pfnUserCallback = on_message,
};

const void *xpu_vk_debug_chain(const char **extensions, uint32_t *count)
{
	if (!messages_path())
		return NULL;
	extensions[(*count)++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
	return &messenger_info;
}

int xpu_vk_debug_start(PFN_vkGetInstanceProcAddr get_proc)
{
	if (!messages_path())
		return 0;
	PFN_vkCreateDebugUtilsMessengerEXT create =
		(PFN_vkCreateDebugUtilsMessengerEXT)get_proc(xpu_vk_instance, "vkCreateDebugUtilsMessengerEXT");
	if (!create)
		return xpu_fail("XPULUA_VK_MESSAGES is set but the loader has no vkCreateDebugUtilsMessengerEXT");
	static VkDebugUtilsMessengerEXT messenger; /* kept to exit, like the instance */
	return xpu_vk_check(create(xpu_vk_instance, &messenger_info, NULL, &messenger),
			    "vkCreateDebugUtilsMessengerEXT", __FILE__, __LINE__);
}
